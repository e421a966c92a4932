// The worker Agent end to end: a real leader process and real worker processes on 127.0.0.1,
// killed, stopped and restarted. Every process is bounded in time and killed with the test.
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/e2e/e2e_fixture.h"

namespace muster {
namespace {

using ::muster::testing::E2eTest;
using ::muster::testing::kBound;
using ::muster::testing::Subprocess;
using ::testing::HasSubstr;
using ::testing::Not;

class AgentE2eTest : public E2eTest {};

TEST_F(AgentE2eTest, FourWorkers_TopologyBootstrapValueBarrierAndShutdownBarrier) {
  StartLeader({"--jobs=worker=4", "--shutdown_barrier_timeout_ms=20000"});
  std::vector<Subprocess*> workers;
  for (int task = 0; task < 4; ++task) workers.push_back(StartWorker(task, "full"));
  for (int task = 0; task < 4; ++task) {
    ExpectExit(workers[task], 0);
    const std::string& out = workers[task]->output();
    EXPECT_THAT(out, HasSubstr("EVENT connect code=OK"));
    EXPECT_THAT(out,
                HasSubstr(absl::StrCat("EVENT global_ids ", 2 * task, ",", 2 * task + 1, ",")));
    EXPECT_THAT(out, HasSubstr("EVENT nccl id-42"));
    EXPECT_THAT(out, HasSubstr("EVENT barrier ok"));
    EXPECT_THAT(out, HasSubstr("EVENT shutdown code=OK"));
  }
}

TEST_F(AgentE2eTest, KillOneWorker_OthersLearnWithinMillisecondsNamingIt) {
  StartLeader({"--jobs=worker=4"});
  std::vector<Subprocess*> workers;
  for (int task = 0; task < 4; ++task) workers.push_back(StartWorker(task, "wait_error"));
  for (auto* worker : workers) ASSERT_TRUE(worker->WaitForLine("EVENT ready", kBound).ok());
  int64_t killed_at = absl::ToUnixMicros(absl::Now());
  workers[3]->Signal(SIGKILL);
  int64_t last = 0;
  for (int task = 0; task < 3; ++task) {
    auto error = workers[task]->WaitForLine("EVENT error", kBound);
    ASSERT_TRUE(error.ok()) << error.status();
    EXPECT_THAT(*error, HasSubstr("code=UNAVAILABLE"));
    EXPECT_THAT(*error, HasSubstr("/job:worker/task:3"));
    last = std::max(last, ErrorTime(*error));
  }
  std::printf("kill -9 -> last survivor's error callback: %.2f ms\n", (last - killed_at) / 1000.0);
  EXPECT_GT(last, killed_at);
}

TEST_F(AgentE2eTest, KillBarrierParticipant_SurvivorsGetInternalCarryingTheFailedTask) {
  StartLeader({"--jobs=worker=3"});
  Subprocess* victim = StartWorker(2, "wait_error");
  std::vector<Subprocess*> survivors = {StartWorker(0, "barrier_wait", {"--tasks=3"}),
                                        StartWorker(1, "barrier_wait", {"--tasks=3"})};
  ASSERT_TRUE(victim->WaitForLine("EVENT ready", kBound).ok());
  for (auto* survivor : survivors) {
    auto waiting = survivor->WaitForLine("EVENT at_barrier", kBound);
    ASSERT_TRUE(waiting.ok()) << waiting.status() << survivor->output();
  }
  victim->Signal(SIGKILL);
  for (auto* survivor : survivors) {
    auto line = survivor->WaitForLine("EVENT barrier ", kBound);
    ASSERT_TRUE(line.ok()) << line.status() << survivor->output();
    EXPECT_THAT(*line, HasSubstr("failed_task=/job:worker/task:2 code=INTERNAL"));
    EXPECT_THAT(*line, HasSubstr("Barrier Id: done::0, Task: /job:worker/task:2"));
    EXPECT_THAT(*line, Not(HasSubstr("..")));
  }
}

TEST_F(AgentE2eTest, StoppedWorker_UnavailableAfterHeartbeatTimeoutThenMustReset) {
  StartLeader({"--jobs=worker=2", "--heartbeat_timeout_ms=2000"});
  auto* alive = StartWorker(0, "wait_error", {"--heartbeat_timeout_ms=2000"});
  // The stopped worker's CAF connection outlives its stop: on SIGCONT it must learn of its error
  // from the leader (ABORTED), not from its own connection timeout firing first.
  auto* stopped = StartWorker(1, "wait_error",
                              {"--heartbeat_timeout_ms=2000", "--connection_timeout_ms=60000"});
  ASSERT_TRUE(alive->WaitForLine("EVENT ready", kBound).ok());
  ASSERT_TRUE(stopped->WaitForLine("EVENT ready", kBound).ok());
  int64_t stopped_at = absl::ToUnixMicros(absl::Now());
  stopped->Signal(SIGSTOP);
  auto error = alive->WaitForLine("EVENT error", kBound);
  ASSERT_TRUE(error.ok()) << error.status();
  double after_ms = (ErrorTime(*error) - stopped_at) / 1000.0;
  std::printf("SIGSTOP -> survivor's error callback: %.0f ms (heartbeat timeout 2000 ms)\n",
              after_ms);
  EXPECT_THAT(*error, HasSubstr("code=UNAVAILABLE"));
  EXPECT_THAT(*error, HasSubstr("heartbeat timeout"));
  EXPECT_GE(after_ms, 1000);  // not before the deadline: last heartbeat + 2 s, beats every 1 s
  stopped->Signal(SIGCONT);
  auto own = stopped->WaitForLine("EVENT error", kBound);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_THAT(*own, HasSubstr("code=ABORTED"));
  EXPECT_THAT(*own, HasSubstr("already-in-error"));
  auto reset = stopped->WaitForLine("EVENT reset", kBound);
  ASSERT_TRUE(reset.ok()) << reset.status();
  EXPECT_THAT(*reset, HasSubstr("code=OK"));
}

// An agent without a heartbeat timeout of its own beats by the leader's (2 s): never judged
// stale; one whose own (10 s) is longer than the leader's is refused at Connect().
TEST_F(AgentE2eTest, HeartbeatTimeout_UnsetTakesTheLeadersAndALongerOneIsRefused) {
  StartLeader({"--jobs=worker=2", "--heartbeat_timeout_ms=2000"});
  auto* unset = StartWorker(0, "wait_error", {"--heartbeat_timeout_ms=0", "--wait_ms=6000"});
  ASSERT_TRUE(unset->WaitForLine("EVENT ready", kBound).ok()) << unset->output();
  auto quiet = unset->WaitForLine("EVENT no error", kBound);
  ASSERT_TRUE(quiet.ok()) << quiet.status() << unset->output();
  ExpectExit(unset, 1);  // wait_error's exit code when no error came
  EXPECT_THAT(unset->output(), Not(HasSubstr("EVENT error")));
  auto* longer = StartWorker(1, "wait_error", {"--heartbeat_timeout_ms=10000"});
  auto refused = longer->WaitForLine("EVENT connect", kBound);
  ASSERT_TRUE(refused.ok()) << refused.status() << longer->output();
  EXPECT_THAT(*refused, HasSubstr("code=FAILED_PRECONDITION"));
  EXPECT_THAT(*refused, HasSubstr("10000 ms"));
  EXPECT_THAT(*refused, HasSubstr("2000 ms"));
  EXPECT_THAT(*refused, HasSubstr("heartbeat_timeout unset"));
  ExpectExit(longer, 1);
}

// With WorkerNodeOptions' connection timeout (the heartbeat timeout), agents send their beats
// one-way: a stopped (hung but connected) worker is still detected by its missing beats.
TEST_F(AgentE2eTest, StoppedWorkerWithOneWayBeats_UnavailableWithinTheHeartbeatTimeout) {
  StartLeader({"--jobs=worker=2", "--heartbeat_timeout_ms=2000"});
  auto* alive = StartWorker(0, "wait_error", {"--heartbeat_timeout_ms=2000"});
  auto* stopped = StartWorker(1, "wait_error", {"--heartbeat_timeout_ms=2000"});
  ASSERT_TRUE(alive->WaitForLine("EVENT ready", kBound).ok());
  ASSERT_TRUE(stopped->WaitForLine("EVENT ready", kBound).ok());
  // The beats keep both connected past two heartbeat timeouts.
  EXPECT_EQ(alive->WaitForLine("EVENT error", absl::Seconds(5)).status().code(),
            absl::StatusCode::kDeadlineExceeded)
      << alive->output();
  int64_t stopped_at = absl::ToUnixMicros(absl::Now());
  stopped->Signal(SIGSTOP);
  auto error = alive->WaitForLine("EVENT error", kBound);
  ASSERT_TRUE(error.ok()) << error.status();
  double after_ms = (ErrorTime(*error) - stopped_at) / 1000.0;
  std::printf("SIGSTOP -> survivor's error callback: %.0f ms (one-way beats, timeout 2000 ms)\n",
              after_ms);
  EXPECT_THAT(*error, HasSubstr("code=UNAVAILABLE"));
  EXPECT_THAT(*error, HasSubstr("/job:worker/task:1 heartbeat timeout"));
  EXPECT_GE(after_ms, 1000);  // last beat + 2 s, beats every 1 s
  EXPECT_LE(after_ms, 4000);
  // Woken, it learns that it failed: pushed by the leader on its next beat (ABORTED), or its own
  // connection timeout saw the leader silent for the whole stop (UNAVAILABLE).
  stopped->Signal(SIGCONT);
  auto own = stopped->WaitForLine("EVENT error", kBound);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_THAT(*own, ::testing::AnyOf(HasSubstr("code=ABORTED"), HasSubstr("code=UNAVAILABLE")));
}

TEST_F(AgentE2eTest, BatchedHeartbeatsAndCombinedBarrier_TasksStayUpThenStoppedProcessFails) {
  StartLeader({"--jobs=worker=4", "--heartbeat_timeout_ms=1000"});
  std::vector<std::string> flags = {"--heartbeat_timeout_ms=1000", "--tasks=4", "--local_tasks=2"};
  auto* stopped = StartWorker(0, "batched", flags);
  auto* alive = StartWorker(2, "batched", flags);
  ASSERT_TRUE(stopped->WaitForLine("EVENT ready", kBound).ok()) << stopped->output();
  ASSERT_TRUE(alive->WaitForLine("EVENT ready", kBound).ok()) << alive->output();
  // Both processes' tasks meet at one barrier through their combiners.
  ASSERT_TRUE(stopped->WaitForLine("EVENT barrier passed by 2 tasks", kBound).ok())
      << stopped->output();
  ASSERT_TRUE(alive->WaitForLine("EVENT barrier passed by 2 tasks", kBound).ok())
      << alive->output();
  // Three heartbeat timeouts later every task is still connected.
  auto states = alive->WaitForLine("EVENT states", kBound);
  ASSERT_TRUE(states.ok()) << states.status() << alive->output();
  EXPECT_THAT(*states, ::testing::EndsWith("states TASKSTATE_CONNECTED,TASKSTATE_CONNECTED,"
                                           "TASKSTATE_CONNECTED,TASKSTATE_CONNECTED,"));
  int64_t stopped_at = absl::ToUnixMicros(absl::Now());
  stopped->Signal(SIGSTOP);
  auto error = alive->WaitForLine("EVENT error", kBound);
  ASSERT_TRUE(error.ok()) << error.status() << alive->output();
  EXPECT_THAT(*error, HasSubstr("code=UNAVAILABLE"));
  EXPECT_THAT(*error, HasSubstr("heartbeat timeout"));
  EXPECT_THAT(*error, ::testing::ContainsRegex("/job:worker/task:[01]"));
  std::printf("SIGSTOP of a batching process -> error callback: %.0f ms (timeout 1000 ms)\n",
              (ErrorTime(*error) - stopped_at) / 1000.0);
  EXPECT_GE(ErrorTime(*error) - stopped_at, 400'000);  // not before last beat + timeout
  stopped->Signal(SIGCONT);
}

TEST_F(AgentE2eTest, FrozenLeader_PendingCallUnavailableWithinATimeoutAndAQuarter) {
  StartLeader({"--jobs=worker=1"});
  // A 4 s heartbeat timeout: CAF's connection timeout of 4 s, checked every 1 s.
  auto* worker = StartWorker(0, "pending_get", {"--heartbeat_timeout_ms=4000"});
  ASSERT_TRUE(worker->WaitForLine("EVENT ready", kBound).ok()) << worker->output();
  absl::Time stopped_at = absl::Now();
  leader_->Signal(SIGSTOP);
  auto get = worker->WaitForLine("EVENT get", kBound);
  double after_ms = absl::ToDoubleMilliseconds(absl::Now() - stopped_at);
  leader_->Signal(SIGCONT);
  ASSERT_TRUE(get.ok()) << get.status() << worker->output();
  std::printf("SIGSTOP of the leader -> pending call failed: %.0f ms (timeout 4000 ms)\n",
              after_ms);
  EXPECT_THAT(*get, HasSubstr("code=UNAVAILABLE"));
  EXPECT_GE(after_ms, 3000);  // its last keep-alive (every 500 ms) + the timeout, not before
  EXPECT_LE(after_ms, 6500);  // the timeout + one check interval (1 s) + scheduling slack
  ExpectExit(worker, 0);
}

TEST_F(AgentE2eTest, KillLeader_CallbacksFireAndPendingCallsReturnUnavailable) {
  StartLeader({"--jobs=worker=2"});
  auto* w0 = StartWorker(0, "pending_get");
  auto* w1 = StartWorker(1, "pending_get");
  ASSERT_TRUE(w0->WaitForLine("EVENT ready", kBound).ok());
  ASSERT_TRUE(w1->WaitForLine("EVENT ready", kBound).ok());
  leader_->Signal(SIGKILL);
  for (auto* worker : {w0, w1}) {
    ExpectExit(worker, 0);
    EXPECT_THAT(worker->output(), HasSubstr("EVENT get code=UNAVAILABLE"));
    EXPECT_THAT(worker->output(), HasSubstr("code=UNAVAILABLE message=lost the connection to the "
                                            "Muster leader"));
  }
}

TEST_F(AgentE2eTest, RestartedWorker_NewIncarnationAbortedAndOthersTold) {
  StartLeader({"--jobs=worker=2"});
  auto* w0 = StartWorker(0, "wait_error");
  auto* w1 = StartWorker(1, "wait_error");
  ASSERT_TRUE(w0->WaitForLine("EVENT ready", kBound).ok());
  ASSERT_TRUE(w1->WaitForLine("EVENT ready", kBound).ok());
  auto* restarted = StartWorker(1, "connect");
  ExpectExit(restarted, 1);
  EXPECT_THAT(restarted->output(), HasSubstr("EVENT connect code=ABORTED"));
  auto told = w0->WaitForLine("EVENT error", kBound);
  ASSERT_TRUE(told.ok()) << told.status();
  EXPECT_THAT(*told, HasSubstr("/job:worker/task:1"));
}

TEST_F(AgentE2eTest, RecoverableJob_KilledWorkerRestartsAndRejoins) {
  StartLeader({"--jobs=worker=2", "--recoverable_jobs=worker"});
  auto* w0 = StartWorker(0, "wait_error", {"--recoverable"});
  auto* w1 = StartWorker(1, "wait_error", {"--recoverable"});
  ASSERT_TRUE(w0->WaitForLine("EVENT ready", kBound).ok());
  ASSERT_TRUE(w1->WaitForLine("EVENT ready", kBound).ok());
  w1->Signal(SIGKILL);
  ASSERT_TRUE(w1->Wait(kBound).ok());
  auto* again = StartWorker(1, "connect", {"--recoverable"});
  ExpectExit(again, 0);
  EXPECT_THAT(again->output(), HasSubstr("EVENT connect code=OK"));
  EXPECT_THAT(w0->output(), Not(HasSubstr("EVENT error")));
}

TEST_F(AgentE2eTest, LateWorker_RegisterTimeoutNamesTheMissingTasks) {
  StartLeader({"--jobs=worker=3", "--register_barrier", "--register_timeout_ms=1000"});
  auto* w0 = StartWorker(0, "connect");
  auto* w1 = StartWorker(1, "connect");
  for (auto* worker : {w0, w1}) {
    ExpectExit(worker, 1);
    EXPECT_THAT(worker->output(), HasSubstr("EVENT connect code=DEADLINE_EXCEEDED"));
    EXPECT_THAT(worker->output(), HasSubstr("worker/2"));
  }
  auto* late = StartWorker(2, "connect");
  ExpectExit(late, 1);
  EXPECT_THAT(late->output(), HasSubstr("EVENT connect code=DEADLINE_EXCEEDED"));
  EXPECT_THAT(late->output(), HasSubstr("worker/2"));
}

TEST_F(AgentE2eTest, Watch_InsertUpdateDeleteArriveInOrderAcrossProcesses) {
  StartLeader({"--jobs=worker=2"});
  auto* writer = StartWorker(0, "watch");
  auto* watcher = StartWorker(1, "watch");
  ExpectExit(writer, 0);
  ExpectExit(watcher, 0);
  const std::string& out = watcher->output();
  size_t inserted = out.find("change INSERTED cfg/a=1");
  size_t updated = out.find("change UPDATED cfg/a=2");
  size_t deleted = out.find("change DELETED cfg/a=");
  ASSERT_NE(inserted, std::string::npos) << out;
  ASSERT_NE(updated, std::string::npos) << out;
  ASSERT_NE(deleted, std::string::npos) << out;
  EXPECT_LT(inserted, updated);
  EXPECT_LT(updated, deleted);
}

TEST_F(AgentE2eTest, XlaClient_ConnectEnumerateKeyValueBarrierShutdown) {
  StartLeader({"--jobs=xla=3", "--shutdown_barrier_timeout_ms=20000"});
  std::vector<Subprocess*> nodes;
  for (int node = 0; node < 3; ++node) nodes.push_back(StartWorker(node, "xla", {"--job=xla"}));
  for (int node = 0; node < 3; ++node) {
    ExpectExit(nodes[node], 0);
    const std::string& out = nodes[node]->output();
    EXPECT_THAT(out, HasSubstr(absl::StrCat("EVENT xla nodes=3 mine=", 3 * node, ",", 3 * node + 1,
                                            ",", 3 * node + 2, ",")));
    EXPECT_THAT(out, HasSubstr("EVENT xla get node0"));
    EXPECT_THAT(out, HasSubstr("EVENT xla shutdown code=OK"));
  }
}

}  // namespace
}  // namespace muster
