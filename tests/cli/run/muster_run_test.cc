// `muster run` across real processes: a launcher hosting the leader (or two launchers acting as
// two hosts) runs 4 task processes of tests/cli/programs/run_worker.cc; tests kill -9 one of
// them and check what the restart policy restarts (by generation, incarnation and pid), the
// launcher's exit status and message, and that no process outlives a stopped launcher.
#include <errno.h>
#include <signal.h>

#include <map>
#include <set>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>

#include "muster/messages/task_name.h"
#include "muster/tools/common/command_line.h"
#include "muster/tools/run/run_command.h"
#include "tests/cli/cli_process.h"

namespace muster::cli {
namespace {

using ::testing::AnyOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kRunBound = absl::Seconds(40);

struct Ready {
  int pid = 0;
  std::string incarnation;
};

// The value of `key=` in a READY line.
std::string Field(const std::string& line, const std::string& key) {
  size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  at += key.size() + 2;
  return line.substr(at, line.find(' ', at) - at);
}

// Waits until `process` printed "READY task=T generation=G" for every task in `tasks`.
std::map<int, Ready> WaitReady(Subprocess& process, const std::vector<int>& tasks, int generation) {
  std::map<int, Ready> ready;
  absl::Time deadline = absl::Now() + kBound;
  while (ready.size() < tasks.size() && absl::Now() < deadline) {
    for (int task : tasks) {
      std::string needle = absl::StrCat("READY task=", task, " generation=", generation, " ");
      size_t at = process.output().find(needle);
      if (at == std::string::npos || ready.count(task)) continue;
      std::string line = process.output().substr(at, process.output().find('\n', at) - at);
      Ready r;
      EXPECT_TRUE(absl::SimpleAtoi(Field(line, "pid"), &r.pid)) << line;
      r.incarnation = Field(line, "incarnation");
      ready[task] = r;
    }
    if (ready.size() < tasks.size()) (void)process.WaitForLine("\x01", absl::Milliseconds(50));
  }
  EXPECT_EQ(ready.size(), tasks.size()) << "generation " << generation << ":\n" << process.output();
  return ready;
}

// Waits until `process` printed `text` anywhere in its output (tasks print in any order).
bool Printed(Subprocess& process, const std::string& text) {
  return process.WaitForOutput(text, kBound);
}

bool Gone(int pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

std::unique_ptr<Subprocess> StartRun(std::vector<std::string> flags,
                                     std::vector<std::string> worker_flags = {}) {
  std::vector<std::string> args = {"run", "--stop-timeout=3s", "--heartbeat-timeout=2s"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("--");
  args.push_back(MUSTER_RUN_WORKER_BIN);
  args.insert(args.end(), worker_flags.begin(), worker_flags.end());
  return StartMuster(std::move(args));
}

TEST(MusterRunTest, OneForAll_KillOneTask_EveryTaskRestartsAsNewIncarnationsAndTheJobCompletes) {
  auto run = StartRun({"--port=0", "--job=worker=4", "--restart=one-for-all"});
  ASSERT_NE(run, nullptr);
  auto first = WaitReady(*run, {0, 1, 2, 3}, 0);
  ASSERT_EQ(first.size(), 4u);
  kill(first[2].pid, SIGKILL);
  auto second = WaitReady(*run, {0, 1, 2, 3}, 1);
  ASSERT_EQ(second.size(), 4u);
  for (int task = 0; task < 4; ++task) {
    EXPECT_NE(second[task].incarnation, first[task].incarnation) << task;
    EXPECT_NE(second[task].pid, first[task].pid) << task;
  }
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 0) << result.output;
  for (int task = 0; task < 4; ++task) {
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat("DONE task=", task, " generation=1")));
  }
  EXPECT_THAT(result.output, HasSubstr("/job:worker/task:2 failed: UNAVAILABLE"));
  EXPECT_THAT(result.output, HasSubstr("restarting every task (round 1)"));
  EXPECT_THAT(result.output, HasSubstr("round=1"));
  EXPECT_THAT(result.output, HasSubstr("muster run: every task finished"));
  EXPECT_THAT(result.output, Not(HasSubstr("generation=2")));
}

// A process of the failed round that goes on (it ignores SIGTERM and its pushed error) is
// fenced: its key-value write is refused, naming what it ran and the new round, and the new
// round completes.
TEST(MusterRunTest, OneForAll_AnOldRoundProcessThatGoesOnIsRefused) {
  auto run = StartRun({"--port=0", "--job=worker=2", "--restart=one-for-all"}, {"--linger_task=0"});
  ASSERT_NE(run, nullptr);
  auto first = WaitReady(*run, {0, 1}, 0);
  ASSERT_EQ(first.size(), 2u);
  kill(first[1].pid, SIGKILL);
  ASSERT_TRUE(run->WaitForLine("STALE WRITE", kBound).ok()) << run->output();
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("STALE WRITE FAILED_PRECONDITION: This process ran /job:worker/task:0 "
                        "as generation 0 of round 0, and the job restarted every task since "
                        "(round 1)"));
  EXPECT_THAT(result.output, HasSubstr("DONE task=0 generation=1"));
  EXPECT_THAT(result.output, HasSubstr("DONE task=1 generation=1"));
}

// An elastic job of 2 to 3 tasks under one-for-one: a killed member leaves the other two a
// membership of their own at once (nobody is told an error), its next generation waits to be
// admitted, and the two admit it at their safe point; all three then finish.
TEST(MusterRunTest, Elastic_AKilledMemberShrinksTheJobAndItsRestartIsAdmittedAtTheSafePoint) {
  auto run =
      StartRun({"--port=0", "--job=worker=2:3", "--settle-time=500ms", "--restart=one-for-one"},
               {"--membership"});
  ASSERT_NE(run, nullptr);
  auto first = WaitReady(*run, {0, 1, 2}, 0);
  ASSERT_EQ(first.size(), 3u);
  for (int task : {0, 1, 2}) {
    ASSERT_TRUE(Printed(
        *run, absl::StrCat("MEMBERSHIP task=", task, " generation=0 version=1 members=0,1,2")))
        << run->output();
  }
  kill(first[2].pid, SIGKILL);
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 0) << result.output;
  for (int task : {0, 1}) {
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat("MEMBERSHIP task=", task,
                                                      " generation=0 version=2 members=0,1")));
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat("MEMBERSHIP task=", task,
                                                      " generation=0 version=3 members=0,1,2")));
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat("DONE task=", task, " generation=0")));
  }
  EXPECT_THAT(result.output, HasSubstr("MEMBERSHIP task=2 generation=1 version=3 members=0,1,2"));
  EXPECT_THAT(result.output, HasSubstr("DONE task=2 generation=1"));
  EXPECT_THAT(result.output, Not(HasSubstr("ERROR CALLBACK")));
}

TEST(MusterRunTest, OneForOne_KillOneTask_OnlyItRestartsAndTheOthersNeverSeeAnError) {
  auto run = StartRun({"--port=0", "--job=worker=4", "--restart=one-for-one"});
  ASSERT_NE(run, nullptr);
  auto first = WaitReady(*run, {0, 1, 2, 3}, 0);
  ASSERT_EQ(first.size(), 4u);
  kill(first[1].pid, SIGKILL);
  auto second = WaitReady(*run, {1}, 1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second[1].incarnation, first[1].incarnation);
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 0) << result.output;
  for (int task : {0, 2, 3}) {
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat("DONE task=", task, " generation=0")));
    EXPECT_THAT(result.output, Not(HasSubstr(absl::StrCat("READY task=", task, " generation=1"))));
  }
  EXPECT_THAT(result.output, HasSubstr("DONE task=1 generation=1"));
  EXPECT_THAT(result.output, Not(HasSubstr("ERROR CALLBACK")));
  EXPECT_THAT(result.output, HasSubstr("/job:worker/task:1 failed: UNAVAILABLE"));
  EXPECT_THAT(result.output, HasSubstr("restarting it"));
}

TEST(MusterRunTest, RestartIntensityExceeded_ExitsNonZeroNamingTheTaskAndHowOften) {
  auto run = StartRun({"--port=0", "--job=worker=4", "--restart=one-for-one", "--max-restarts=2",
                       "--restart-window=1m"},
                      {"--crash_task=1", "--crash_below_generation=100"});
  ASSERT_NE(run, nullptr);
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("READY task=1 generation=2"));
  EXPECT_THAT(result.output, Not(HasSubstr("READY task=1 generation=3")));
  EXPECT_THAT(result.output, HasSubstr("muster run: the job failed: "));
  EXPECT_THAT(result.output, HasSubstr("exceed the restart intensity of 2 (/job:worker/task:1 3 "
                                       "times)"));
}

TEST(MusterRunTest, RestartNone_KillOneTask_TheJobFailsNamingIt) {
  auto run = StartRun({"--port=0", "--job=worker=3"});
  ASSERT_NE(run, nullptr);
  auto first = WaitReady(*run, {0, 1, 2}, 0);
  ASSERT_EQ(first.size(), 3u);
  kill(first[2].pid, SIGKILL);
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("muster run: the job failed: /job:worker/task:2 failed: "
                                       "UNAVAILABLE"));
  EXPECT_THAT(result.output, Not(HasSubstr("generation=1")));
  EXPECT_THAT(result.output, HasSubstr("ERROR CALLBACK"));  // the others were told
}

// A worker killed with SIGKILL: the failure names the task and its process by host and pid (the
// leader saw its connection close) or by its signal (its launcher saw it die first; which of the
// two reaches the leader first is a race), in Muster's words (no CAF error notation, no node
// hash); the survivors' exits are logged as consequences of that failure, not as failures of
// their own.
TEST(MusterRunTest, RestartNone_KillOneTask_FailureInPlainWordsAndLaterExitsAsItsConsequences) {
  auto run = StartRun({"--port=0", "--job=worker=3"});
  ASSERT_NE(run, nullptr);
  auto first = WaitReady(*run, {0, 1, 2}, 0);
  ASSERT_EQ(first.size(), 3u);
  kill(first[2].pid, SIGKILL);
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 1) << result.output;
  EXPECT_THAT(result.output,
              AnyOf(HasSubstr(absl::StrCat("muster run: /job:worker/task:2 failed: UNAVAILABLE: "
                                           "Task /job:worker/task:2: connection to worker lost "
                                           "(host 127.0.0.1 pid ",
                                           first[2].pid, ": the connection to the peer closed)")),
                    HasSubstr("muster run: /job:worker/task:2 failed: UNAVAILABLE: The process of "
                              "/job:worker/task:2 was killed by signal 9 (SIGKILL) (reported by "
                              "its launcher)")));
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("muster run: /job:worker/task:2 (pid ", first[2].pid,
                                     ", generation 0) was killed by signal 9 (SIGKILL)\n")));
  EXPECT_THAT(result.output, Not(HasSubstr("exit_reason(")));
  EXPECT_THAT(result.output, Not(HasSubstr("system_error(")));
  EXPECT_THAT(result.output, Not(ContainsRegex("[0-9A-F]{8}[^ ]*#[0-9]+")));
  for (int task : {0, 1}) {
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat(
                                   "muster run: /job:worker/task:", task, " (pid ", first[task].pid,
                                   ", generation 0) exited with status 2 "
                                   "after the job failed because /job:worker/task:2 failed\n")))
        << result.output;
    EXPECT_THAT(result.output,
                Not(HasSubstr(absl::StrCat("muster run: /job:worker/task:", task, " failed"))));
  }
}

TEST(MusterRunTest, SigintToTheLauncher_ForwardedAndNoProcessOutlivesIt) {
  auto run = StartRun({"--port=0", "--job=worker=4"});
  ASSERT_NE(run, nullptr);
  auto first = WaitReady(*run, {0, 1, 2, 3}, 0);
  ASSERT_EQ(first.size(), 4u);
  run->Signal(SIGINT);
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 130) << result.output;
  EXPECT_THAT(result.output, HasSubstr("signal 2: stopping every task"));
  for (const auto& [task, ready] : first) EXPECT_TRUE(Gone(ready.pid)) << "task " << task;
}

// Ctrl-C under one-for-all: the tasks leave because they were told to; the leader still sees
// their connections go, but the launcher reports none of that as a failure to restart.
TEST(MusterRunTest, SigintUnderOneForAll_ExitsAreNeitherFailuresNorRestarts) {
  auto run = StartRun({"--port=0", "--job=worker=4", "--restart=one-for-all"});
  ASSERT_NE(run, nullptr);
  auto first = WaitReady(*run, {0, 1, 2, 3}, 0);
  ASSERT_EQ(first.size(), 4u);
  run->Signal(SIGINT);
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 130) << result.output;
  EXPECT_THAT(result.output, HasSubstr("signal 2: stopping every task"));
  EXPECT_THAT(result.output,  // each exit is printed
              HasSubstr("generation 0) was killed by signal 2 (SIGINT)"));
  EXPECT_THAT(result.output, Not(HasSubstr("restarting")));
  EXPECT_THAT(result.output, Not(ContainsRegex("muster run: /job:worker/task:[0-3] failed")));
  EXPECT_THAT(result.output, Not(HasSubstr("generation=1")));
  for (const auto& [task, ready] : first) EXPECT_TRUE(Gone(ready.pid)) << "task " << task;
}

TEST(MusterRunTest, LauncherKilled_ItsTaskProcessesDieWithIt) {
  auto run = StartRun({"--port=0", "--job=worker=2"});
  ASSERT_NE(run, nullptr);
  auto first = WaitReady(*run, {0, 1}, 0);
  ASSERT_EQ(first.size(), 2u);
  run->Signal(SIGKILL);
  (void)run->Wait(kBound);
  absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (!(Gone(first[0].pid) && Gone(first[1].pid)) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_TRUE(Gone(first[0].pid));
  EXPECT_TRUE(Gone(first[1].pid));
}

TEST(MusterRunTest, TwoLaunchersAsTwoHosts_OneForAllRestartsTheTasksOfBoth) {
  auto host_a = StartRun({"--port=0", "--job=worker=4", "--tasks=0-1", "--restart=one-for-all"});
  ASSERT_NE(host_a, nullptr);
  auto ready = host_a->WaitForLine("leader ready at ", kBound);
  ASSERT_TRUE(ready.ok()) << ready.status();
  size_t at = ready->find("ready at ") + 9;
  std::string address = ready->substr(at, ready->find(' ', at) - at);
  auto host_b = StartRun({"--leader=" + address, "--tasks=2-3"});
  ASSERT_NE(host_b, nullptr);
  auto a0 = WaitReady(*host_a, {0, 1}, 0);
  auto b0 = WaitReady(*host_b, {2, 3}, 0);
  ASSERT_EQ(a0.size() + b0.size(), 4u);
  kill(b0[3].pid, SIGKILL);
  auto a1 = WaitReady(*host_a, {0, 1}, 1);
  auto b1 = WaitReady(*host_b, {2, 3}, 1);
  EXPECT_EQ(a1.size() + b1.size(), 4u);
  Result b = Finish(*host_b, kRunBound);
  Result a = Finish(*host_a, kRunBound);
  EXPECT_EQ(b.code, 0) << b.output;
  EXPECT_EQ(a.code, 0) << a.output;
  EXPECT_THAT(a.output, HasSubstr("/job:worker/task:3 failed"));
  EXPECT_THAT(b.output, HasSubstr("restarting every task (round 1)"));
}

TEST(MusterRunTest, ExampleWorker_TakesItsIdentityFromTheEnvironment) {
  Result result =
      RunMuster({"run", "--port=0", "--job=worker=3", "--", MUSTER_WORKER_BIN}, kRunBound);
  EXPECT_EQ(result.code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("[worker/2] /job:worker/task:2 passed barrier"));
}

TEST(MusterRunTest, BadCommandLines_UsageErrors) {
  EXPECT_EQ(RunMuster({"run", "--job=worker=2", MUSTER_RUN_WORKER_BIN}).code, kExitUsage);
  EXPECT_EQ(RunMuster({"run", "--job=worker=2", "--restart=sometimes", "--", "true"}).code,
            kExitUsage);
  Result join = RunMuster({"run", "--leader=127.0.0.1:1", "--", "true"});
  EXPECT_EQ(join.code, kExitUsage);
  EXPECT_THAT(join.output, HasSubstr("--leader needs --tasks"));
  EXPECT_EQ(RunMuster({"run", "--job=worker=2", "--tasks=3-1", "--", "true"}).code, kExitUsage);
}

TEST(MusterRunTest, TaskReadingStandardInput_GetsEndOfFileInsteadOfStopping) {
  Result result = RunMuster({"run", "--port=0", "--job=worker=1", "--", "/bin/sh", "-c",
                             "read line; echo read-status=$?"},
                            kRunBound);
  EXPECT_EQ(result.code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("[worker/0] read-status=1"));
}

TEST(MusterRunTest, ProgramNotFound_TheJobFailsAtOnce) {
  Result result =
      RunMuster({"run", "--port=0", "--job=worker=2", "--", "/nonexistent/program"}, kRunBound);
  EXPECT_EQ(result.code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("could not be started: /nonexistent/program"));
}

// --spares: a spare process runs without a task; a killed task's next generation is that
// process (no new one starts for it), and the launcher starts another spare.
TEST(MusterRunTest, Spares_AKilledTaskTakesTheRunningSpareAndAnotherSpareStarts) {
  auto run = StartRun({"--port=0", "--job=worker=3", "--restart=one-for-one", "--spares=1"});
  ASSERT_NE(run, nullptr);
  auto first = WaitReady(*run, {0, 1, 2}, 0);
  ASSERT_EQ(first.size(), 3u);
  auto spare_line = run->WaitForLine("SPARE pid=", kBound);
  ASSERT_TRUE(spare_line.ok()) << spare_line.status();
  int spare_pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(Field(*spare_line + " ", "pid"), &spare_pid)) << *spare_line;
  kill(first[1].pid, SIGKILL);
  auto second = WaitReady(*run, {1}, 1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[1].pid, spare_pid);
  EXPECT_NE(second[1].incarnation, first[1].incarnation);
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr(absl::StrCat("started /job:worker/task:1 (pid ", spare_pid,
                                                    ", generation 1) from spare/0")));
  EXPECT_THAT(result.output, HasSubstr("started spare/1 (pid "));
  EXPECT_THAT(result.output, HasSubstr("DONE task=1 generation=1"));
  for (int task : {0, 2}) {
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat("DONE task=", task, " generation=0")));
  }
  EXPECT_THAT(result.output, Not(HasSubstr("ERROR CALLBACK")));
  EXPECT_TRUE(Gone(spare_pid));
  // The spare started in its place is stopped with the job, before the launcher exits.
  const std::string next = "started spare/1 (pid ";
  size_t at = result.output.find(next);
  ASSERT_NE(at, std::string::npos);
  int next_pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(
      result.output.substr(at + next.size(), result.output.find(')', at) - at - next.size()),
      &next_pid));
  EXPECT_TRUE(Gone(next_pid));
}

// Spares that exit on their own are replaced twice; after the third, none is started, and a
// restarted task gets a new process as without spares.
TEST(MusterRunTest, SparesThatKeepExiting_NoMoreSparesAndRestartsStartNewProcesses) {
  auto run = StartRun({"--port=0", "--job=worker=2", "--restart=one-for-one", "--spares=1"},
                      {"--spare_exits"});
  ASSERT_NE(run, nullptr);
  auto first = WaitReady(*run, {0, 1}, 0);
  ASSERT_EQ(first.size(), 2u);
  ASSERT_TRUE(run->WaitForLine("3 spares exited on their own: no more spares", kBound).ok())
      << run->output();
  kill(first[1].pid, SIGKILL);
  auto second = WaitReady(*run, {1}, 1);
  ASSERT_EQ(second.size(), 1u);
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("spare/0 (pid "));
  EXPECT_THAT(result.output, HasSubstr("exited with status 4; starting another"));
  EXPECT_THAT(result.output, Not(HasSubstr("started spare/3")));
  EXPECT_THAT(result.output, Not(HasSubstr("from spare/")));
  EXPECT_THAT(result.output, HasSubstr("DONE task=1 generation=1"));
}

TEST(ParseTaskListTest, IdsRangesAndJobs) {
  auto tasks = ParseTaskList("0-2, ps:1,5", "worker");
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  std::vector<std::string> names;
  for (const auto& task : *tasks) names.push_back(TaskName(task));
  EXPECT_THAT(names,
              ::testing::ElementsAre("/job:worker/task:0", "/job:worker/task:1",
                                     "/job:worker/task:2", "/job:ps/task:1", "/job:worker/task:5"));
  EXPECT_FALSE(ParseTaskList("", "worker").ok());
  EXPECT_FALSE(ParseTaskList("x-1", "worker").ok());
  EXPECT_FALSE(ParseTaskList("3-1", "worker").ok());
  EXPECT_FALSE(ParseTaskList(":1", "worker").ok());
}

}  // namespace
}  // namespace muster::cli
