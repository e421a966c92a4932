// `muster run` under srun: a fake srun (tests/cli/programs/fake_srun.py) starts one launcher per
// "node" with Slurm's variables; without further flags they share the job's tasks and the first
// node's launcher hosts the leader.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>

#include "tests/cli/cli_process.h"

namespace muster::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kRunBound = absl::Seconds(40);

// A port of 127.0.0.1 that was free a moment ago (srun's launchers must all know it).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

std::unique_ptr<Subprocess> StartUnderSrun(int launchers, std::vector<std::string> flags,
                                           std::vector<std::string> worker_flags = {}) {
  std::vector<std::string> args = {"/usr/bin/python3",
                                   MUSTER_FAKE_SRUN,
                                   absl::StrCat(launchers),
                                   "127.0.0.1",
                                   "--",
                                   MUSTER_CLI_BIN,
                                   "run",
                                   "--stop-timeout=3s",
                                   "--heartbeat-timeout=2s"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("--");
  args.push_back(MUSTER_RUN_WORKER_BIN);
  args.insert(args.end(), worker_flags.begin(), worker_flags.end());
  auto process = Subprocess::Start(std::move(args));
  EXPECT_TRUE(process.ok()) << process.status();
  return process.ok() ? *std::move(process) : nullptr;
}

// The pid in "READY task=T generation=G ... pid=P ...", or 0.
int ReadyPid(const std::string& output, int task, int generation) {
  size_t at = output.find(absl::StrCat("READY task=", task, " generation=", generation, " "));
  if (at == std::string::npos) return 0;
  size_t pid_at = output.find(" pid=", at);
  int pid = 0;
  if (pid_at == std::string::npos ||
      !absl::SimpleAtoi(output.substr(pid_at + 5, output.find(' ', pid_at + 5) - pid_at - 5),
                        &pid)) {
    return 0;
  }
  return pid;
}

// Waits until every task of 0..3 printed READY for generation 0; returns task 3's pid (0: not
// in time).
int WaitAllReady(Subprocess& run) {
  absl::Time deadline = absl::Now() + kBound;
  while (absl::Now() < deadline) {
    bool all = true;
    for (int task = 0; task < 4; ++task) all &= ReadyPid(run.output(), task, 0) != 0;
    if (all) return ReadyPid(run.output(), 3, 0);
    (void)run.WaitForLine("\x01", absl::Milliseconds(50));
  }
  return 0;
}

TEST(MusterRunUnderSrunTest, TwoLaunchers_ShareTheTasksAndTheFirstNodeHostsTheLeader) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  auto run = StartUnderSrun(2, {absl::StrCat("--port=", port), "--job=worker=4"});
  ASSERT_NE(run, nullptr);
  ASSERT_GT(WaitAllReady(*run), 0) << run->output();
  // The workers finish once the key "go" exists.
  Result go = RunMuster({"kv", "put", absl::StrCat("--leader=127.0.0.1:", port), "go", "1"});
  EXPECT_EQ(go.code, 0) << go.output;
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 0) << result.output;
  const std::string leader = absl::StrCat("leader 127.0.0.1:", port);
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("launcher 0 of 2, tasks worker:0-1, ", leader)));
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("launcher 1 of 2, tasks worker:2-3, ", leader)));
  EXPECT_THAT(result.output, HasSubstr("SLURM_PROCID=1 SLURM_STEP_NUM_TASKS=2"));
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("muster run: leader ready at 127.0.0.1:", port)));
  for (int task = 0; task < 4; ++task) {
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat("DONE task=", task, " generation=0")));
  }
}

TEST(MusterRunUnderSrunTest, OneForAll_AKilledTaskOnTheSecondNodeRestartsEveryTask) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  auto run =
      StartUnderSrun(2, {absl::StrCat("--port=", port), "--job=worker=4", "--restart=one-for-all"});
  ASSERT_NE(run, nullptr);
  const int victim = WaitAllReady(*run);
  ASSERT_GT(victim, 0) << run->output();
  kill(victim, SIGKILL);
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("/job:worker/task:3 failed: UNAVAILABLE"));
  for (int task = 0; task < 4; ++task) {
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat("DONE task=", task, " generation=1")));
  }
  EXPECT_THAT(result.output, Not(HasSubstr("generation=2")));
}

TEST(MusterRunUnderSrunTest, PortZeroNoJobOrTooFewTasks_AUsageErrorSayingWhy) {
  auto run = StartUnderSrun(2, {"--port=0", "--job=worker=4"});
  ASSERT_NE(run, nullptr);
  Result result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("give --port a fixed port, not 0"));

  run = StartUnderSrun(3, {"--port=7", "--job=worker=2"});
  ASSERT_NE(run, nullptr);
  result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("the job has 2 task(s) for 3 launchers"));

  run = StartUnderSrun(2, {"--port=7"});
  ASSERT_NE(run, nullptr);
  result = Finish(*run, kRunBound);
  EXPECT_EQ(result.code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("under srun every launcher needs the job's --job"));
}

}  // namespace
}  // namespace muster::cli
