// The reference contract where jobs start up and shut down, with real leader and worker
// processes: a register barrier that outlasts the heartbeat timeout, a task restarted while it
// waits in that barrier, Connect's deadline, finished barriers, the shutdown barrier's failure,
// and the requests the reference refuses (unknown job, a changed local topology).
#include <csignal>
#include <string>
#include <vector>

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

class ConformanceE2eTest : public E2eTest {};

// Heartbeat timeout 1 s; the last task starts 3 s after the others. Before the register barrier
// passed, the early tasks used to be declared stale.
TEST_F(ConformanceE2eTest, SlowStartingTask_RegisterBarrierOutlastsHeartbeatTimeout_Agent) {
  StartLeader({"--jobs=worker=3", "--register_barrier", "--register_timeout_ms=30000",
               "--heartbeat_timeout_ms=1000", "--shutdown_barrier_timeout_ms=20000"});
  const std::vector<std::string> flags = {"--heartbeat_timeout_ms=1000"};
  std::vector<Subprocess*> workers = {StartWorker(0, "full", flags), StartWorker(1, "full", flags)};
  absl::SleepFor(absl::Seconds(3));
  workers.push_back(StartWorker(2, "full", flags));
  for (auto* worker : workers) {
    ExpectExit(worker, 0);
    EXPECT_THAT(worker->output(), HasSubstr("EVENT connect code=OK"));
    EXPECT_THAT(worker->output(), HasSubstr("EVENT barrier ok"));
    EXPECT_THAT(worker->output(), HasSubstr("EVENT shutdown code=OK"));
    EXPECT_THAT(worker->output(), Not(HasSubstr("EVENT error")));
  }
}

TEST_F(ConformanceE2eTest, SlowStartingNode_RegisterBarrierOutlastsHeartbeatTimeout_XlaClient) {
  StartLeader({"--jobs=xla=3", "--register_barrier", "--register_timeout_ms=30000",
               "--heartbeat_timeout_ms=1000", "--shutdown_barrier_timeout_ms=20000"});
  const std::vector<std::string> flags = {"--job=xla", "--heartbeat_timeout_ms=1000"};
  std::vector<Subprocess*> nodes = {StartWorker(0, "xla", flags), StartWorker(1, "xla", flags)};
  absl::SleepFor(absl::Seconds(3));
  nodes.push_back(StartWorker(2, "xla", flags));
  for (int node = 0; node < 3; ++node) {
    ExpectExit(nodes[node], 0);
    EXPECT_THAT(nodes[node]->output(), HasSubstr("EVENT xla nodes=3"));
    EXPECT_THAT(nodes[node]->output(), HasSubstr("EVENT xla shutdown code=OK"));
  }
}

// A second incarnation of task 1 registers while the first waits in the register barrier: the
// first gets ALREADY_EXISTS, the barrier goes on with the second, nobody else is told.
TEST_F(ConformanceE2eTest, TaskRestartedDuringRegisterBarrier_OldAlreadyExistsOthersUndisturbed) {
  StartLeader({"--jobs=worker=2", "--register_barrier", "--register_timeout_ms=30000",
               "--shutdown_barrier_timeout_ms=20000"});
  auto* old = StartWorker(1, "connect");
  absl::SleepFor(absl::Seconds(1));  // its registration is waiting at the leader
  auto* restarted = StartWorker(1, "full");
  ExpectExit(old, 1);
  EXPECT_THAT(old->output(), HasSubstr("EVENT connect code=ALREADY_EXISTS"));
  EXPECT_THAT(old->output(), HasSubstr("newer incarnation"));
  auto* w0 = StartWorker(0, "full");
  for (auto* worker : {w0, restarted}) {
    ExpectExit(worker, 0);
    EXPECT_THAT(worker->output(), HasSubstr("EVENT connect code=OK"));
    EXPECT_THAT(worker->output(), HasSubstr("EVENT shutdown code=OK"));
    EXPECT_THAT(worker->output(), Not(HasSubstr("EVENT error")));
  }
}

// The agent and the leader share the register timeout; the leader's answer, which names the
// missing task, arrives before the agent gives up.
TEST_F(ConformanceE2eTest, ConnectDeadlineEqualToRegisterTimeout_LeadersAnswerNamesMissingTask) {
  StartLeader({"--jobs=worker=2", "--register_barrier", "--register_timeout_ms=1500"});
  auto* w0 = StartWorker(0, "connect", {"--register_timeout_ms=1500"});
  ExpectExit(w0, 1);
  EXPECT_THAT(w0->output(), HasSubstr("EVENT connect code=DEADLINE_EXCEEDED message=Barrier timed "
                                      "out. Id: [Init]Wait_for_all_tasks_to_register::0"));
  EXPECT_THAT(w0->output(), HasSubstr("worker/1"));
  EXPECT_THAT(w0->output(), Not(HasSubstr("request timed out")));
}

TEST_F(ConformanceE2eTest, FinishedBarrier_NonParticipantGetsInvalidArgument) {
  StartLeader({"--jobs=worker=3"});
  std::vector<Subprocess*> workers;
  for (int task = 0; task < 3; ++task) workers.push_back(StartWorker(task, "outsider"));
  for (auto* worker : workers) ExpectExit(worker, 0);
  EXPECT_THAT(workers[0]->output(), HasSubstr("EVENT pair code=OK"));
  EXPECT_THAT(workers[1]->output(), HasSubstr("EVENT pair code=OK"));
  EXPECT_THAT(workers[2]->output(),
              HasSubstr("EVENT outsider code=INVALID_ARGUMENT message=A non-participating task "
                        "(/job:worker/task:2) called the barrier: pair::0"));
}

// Task 1 never shuts down: task 0's Shutdown() returns the barrier's INTERNAL error, and task 1
// is told, with the task that did not arrive named as the source.
TEST_F(ConformanceE2eTest, ShutdownBarrierFails_ShutdownReturnsInternalStragglerNamed) {
  StartLeader({"--jobs=worker=2", "--shutdown_barrier_timeout_ms=1500"});
  auto* straggler = StartWorker(1, "wait_error");
  ASSERT_TRUE(straggler->WaitForLine("EVENT ready", kBound).ok());
  auto* leaving = StartWorker(0, "shutdown");
  ExpectExit(leaving, 0);
  EXPECT_THAT(leaving->output(), HasSubstr("EVENT shutdown code=INTERNAL message=Failed to "
                                           "disconnect from the leader: Shutdown barrier has "
                                           "failed"));
  EXPECT_THAT(leaving->output(), Not(HasSubstr("FAILED_PRECONDITION")));
  ExpectExit(straggler, 0);
  EXPECT_THAT(straggler->output(), HasSubstr("Error reported from /job:worker/task:1: Shutdown "
                                             "barrier has failed: 1 task(s) did not reach it "
                                             "(worker/1)"));
  EXPECT_THAT(straggler->output(), Not(HasSubstr("/job:/task:0")));
}

TEST_F(ConformanceE2eTest, UnknownJobWatchAndChangedTopology_InvalidArgumentAndInternal) {
  StartLeader({"--jobs=worker=1"});
  auto* worker = StartWorker(0, "probes");
  ExpectExit(worker, 0);
  const std::string& out = worker->output();
  EXPECT_THAT(out, HasSubstr("EVENT watch_unknown code=INVALID_ARGUMENT message=WatchJobState for "
                             "unknown job 'no_such_job'"));
  EXPECT_THAT(out, HasSubstr("EVENT topology_first code=OK"));
  EXPECT_THAT(out, HasSubstr("EVENT topology_other code=INTERNAL message=Different local topology "
                             "for /job:worker/task:0 has been set previously"));
  EXPECT_THAT(out, HasSubstr("EVENT topology_same code=OK"));
}

}  // namespace
}  // namespace muster
