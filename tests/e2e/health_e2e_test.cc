// Job health across processes: a real leader (e2e_leader) and real worker processes
// (health_worker) on 127.0.0.1. A worker whose loop blocks while its heartbeats flow is found
// stuck, also after the whole job paused longer than --stuck-after (which is no stall); a
// preemption notice from one of 8 workers stops all 8 at the same step; a restarted
// writer's ephemeral keys are gone before its new incarnation is registered.
#include <csignal>
#include <map>
#include <set>

#include <absl/strings/numbers.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/e2e/e2e_fixture.h"

namespace muster::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class HealthE2eTest : public E2eTest {
 protected:
  Subprocess* StartHealthWorker(int task, const std::string& scenario,
                                std::vector<std::string> flags = {}) {
    return StartProgram(MUSTER_HEALTH_WORKER_BIN, task, scenario, std::move(flags));
  }
};

// Heartbeats every 500 ms: the others move past the blocked worker's step (as the leader sees
// it) within two beats of the block, and it is found --stuck-after + one beat (grace) later.
TEST_F(HealthE2eTest, WorkerBlockedWithHeartbeatsFlowing_ReportedStuckAfterStuckAfterPlusGrace) {
  StartLeader({"--jobs=worker=4", "--heartbeat_timeout_ms=1000", "--stuck_after_ms=2000"});
  const std::vector<std::string> flags = {"--heartbeat_timeout_ms=1000", "--step_ms=10"};
  std::vector<Subprocess*> healthy;
  for (int task : {0, 1, 3}) healthy.push_back(StartHealthWorker(task, "steps", flags));
  std::vector<std::string> blocked_flags = flags;
  blocked_flags.push_back("--block_at_step=100");
  Subprocess* blocked = StartHealthWorker(2, "steps", blocked_flags);
  auto block_line = blocked->WaitForLine("EVENT blocked", kBound);
  ASSERT_TRUE(block_line.ok()) << block_line.status() << blocked->output();
  int64_t blocked_at = Field(*block_line, "at_us");
  for (Subprocess* worker : healthy) {
    auto error = worker->WaitForLine("EVENT error", kBound);
    ASSERT_TRUE(error.ok()) << error.status() << worker->output();
    EXPECT_THAT(*error, HasSubstr("code=DEADLINE_EXCEEDED"));
    EXPECT_THAT(*error, HasSubstr("/job:worker/task:2 is stuck: its step 100"));
    int64_t latency_us = ErrorTime(*error) - blocked_at;
    EXPECT_GE(latency_us, 2'450'000) << *error;  // not before --stuck-after + grace (2.5 s)
    EXPECT_LT(latency_us, 4'500'000) << *error;  // + two beats + a check period, + 0.9 s slack
    ExpectExit(worker, 0);
  }
  // The stuck task learns it too: its next heartbeat is refused.
  auto own = blocked->WaitForLine("EVENT error", kBound);
  ASSERT_TRUE(own.ok()) << own.status() << blocked->output();
  EXPECT_THAT(*own, HasSubstr("code=DEADLINE_EXCEEDED"));
  EXPECT_THAT(*own, HasSubstr("/job:worker/task:2 is stuck"));
  ExpectExit(blocked, 0);
}

// muster serve --stuck-after 1s, heartbeats every 1 s: the three workers connect a third of a
// beat apart (so their beats do), start stepping together every 50 ms and pause together for
// 2.5 s at step 20 (a checkpoint). When they resume, every step the leader holds is older than
// --stuck-after, and their new steps reach it up to a beat apart. Nobody is stuck. Worker 2
// then blocks at step 30 while the others go on: that one is.
TEST_F(HealthE2eTest, WholeJobPausesLongerThanStuckAfter_NobodyStuck_ThenABlockedWorkerIs) {
  StartLeader({"--jobs=worker=3", "--heartbeat_timeout_ms=2000", "--stuck_after_ms=1000"});
  std::vector<Subprocess*> workers;
  for (int task = 0; task < 3; ++task) {
    std::vector<std::string> flags = {"--heartbeat_timeout_ms=2000",
                                      absl::StrCat("--connect_delay_ms=", 333 * task),
                                      "--start_barrier",
                                      "--step_ms=50",
                                      "--pause_at_step=20",
                                      "--pause_ms=2500"};
    if (task == 2) flags.push_back("--block_at_step=30");
    workers.push_back(StartHealthWorker(task, "steps", flags));
  }
  // A worker found stuck fails the job: worker 2 would stop without blocking.
  auto block_line = workers[2]->WaitForLine("EVENT blocked", kBound);
  ASSERT_TRUE(block_line.ok()) << block_line.status() << workers[2]->output();
  int64_t blocked_at = Field(*block_line, "at_us");
  for (Subprocess* worker : workers) {
    auto error = worker->WaitForLine("EVENT error", kBound);  // its first error
    ASSERT_TRUE(error.ok()) << error.status() << worker->output();
    EXPECT_THAT(*error, HasSubstr("code=DEADLINE_EXCEEDED"));
    EXPECT_THAT(*error, HasSubstr("/job:worker/task:2 is stuck: its step 30 has not advanced"));
    EXPECT_LT(worker->output().find("EVENT resumed"), worker->output().find(*error));
    int64_t latency_us = ErrorTime(*error) - blocked_at;
    EXPECT_GE(latency_us, 1'900'000) << *error;  // not before --stuck-after + grace (2 s)
    EXPECT_LT(latency_us, 5'000'000) << *error;  // + two beats + a check period, + 0.9 s slack
    ExpectExit(worker, 0);
    EXPECT_THAT(worker->output(), Not(HasSubstr("its step 20 "))) << worker->output();
  }
}

TEST_F(HealthE2eTest, PreemptionNoticeFromOneOfEight_AllStopAtTheSameStep) {
  StartLeader({"--jobs=worker=8", "--heartbeat_timeout_ms=2000"});
  std::vector<Subprocess*> workers;
  for (int task = 0; task < 8; ++task) {
    std::vector<std::string> flags = {"--heartbeat_timeout_ms=2000", "--step_ms=5"};
    if (task == 5) flags.push_back("--notify_at_step=200");
    workers.push_back(StartHealthWorker(task, "preempt", flags));
  }
  std::set<int64_t> stops;
  for (int task = 0; task < 8; ++task) {
    // Lines are read in order: the notice comes before task 5's own "notified" line.
    auto notice = workers[task]->WaitForLine("EVENT notice", kBound);
    ASSERT_TRUE(notice.ok()) << notice.status() << workers[task]->output();
    EXPECT_THAT(*notice, HasSubstr("reason=maintenance by=/job:worker/task:5"));
    if (task == 5) {
      auto notified = workers[5]->WaitForLine("EVENT notified", kBound);
      ASSERT_TRUE(notified.ok()) << notified.status() << workers[5]->output();
      EXPECT_THAT(*notified, HasSubstr("first=1"));
    }
    auto stopped = workers[task]->WaitForLine("EVENT stopped", kBound);
    ASSERT_TRUE(stopped.ok()) << stopped.status() << workers[task]->output();
    stops.insert(Field(*stopped, "step"));
    ExpectExit(workers[task], 0);
  }
  ASSERT_EQ(stops.size(), 1u) << "the workers stopped at different steps";
  // Task 5 notified before its step 200, having reached 199: every task stops after that.
  EXPECT_GE(*stops.begin(), 200);
}

TEST_F(HealthE2eTest, RestartedWriter_ItsOldEphemeralKeyIsGoneOnceItIsRegistered) {
  StartLeader({"--jobs=worker=1", "--heartbeat_timeout_ms=2000", "--recoverable_jobs=worker"});
  const std::vector<std::string> flags = {"--heartbeat_timeout_ms=2000", "--recoverable"};
  Subprocess* first = StartHealthWorker(0, "ephemeral", flags);
  auto inserted = first->WaitForLine("EVENT inserted", kBound);
  ASSERT_TRUE(inserted.ok()) << inserted.status() << first->output();
  ASSERT_THAT(*inserted, HasSubstr("code=OK"));
  first->Signal(SIGKILL);
  (void)first->Wait(kBound);
  std::vector<std::string> again = flags;
  again.push_back("--expect_gone");
  Subprocess* second = StartHealthWorker(0, "ephemeral", again);
  auto old = second->WaitForLine("EVENT old key", kBound);
  ASSERT_TRUE(old.ok()) << old.status() << second->output();
  EXPECT_THAT(*old, HasSubstr("code=NOT_FOUND"));
  auto reinserted = second->WaitForLine("EVENT inserted", kBound);
  ASSERT_TRUE(reinserted.ok()) << reinserted.status() << second->output();
  EXPECT_THAT(*reinserted, HasSubstr("code=OK"));
  second->Signal(SIGKILL);
}

}  // namespace
}  // namespace muster::testing
