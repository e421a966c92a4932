// Job health across processes: a real leader (e2e_leader) and real worker processes
// (health_worker) on 127.0.0.1. A worker whose loop blocks while its heartbeats flow is found
// stuck; a preemption notice from one of 8 workers stops all 8 at the same step; a restarted
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

class HealthE2eTest : public E2eTest {
 protected:
  Subprocess* StartHealthWorker(int task, const std::string& scenario,
                                std::vector<std::string> flags = {}) {
    return StartProgram(MUSTER_HEALTH_WORKER_BIN, task, scenario, std::move(flags));
  }
};

TEST_F(HealthE2eTest, WorkerBlockedWithHeartbeatsFlowing_ReportedStuckWithinStuckAfterPlusOne) {
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
    EXPECT_GE(latency_us, 1'900'000) << *error;  // not before --stuck-after
    EXPECT_LT(latency_us, 3'000'000) << *error;  // within --stuck-after + 1 s
    ExpectExit(worker, 0);
  }
  // The stuck task learns it too: its next heartbeat is refused.
  auto own = blocked->WaitForLine("EVENT error", kBound);
  ASSERT_TRUE(own.ok()) << own.status() << blocked->output();
  EXPECT_THAT(*own, HasSubstr("code=DEADLINE_EXCEEDED"));
  EXPECT_THAT(*own, HasSubstr("/job:worker/task:2 is stuck"));
  ExpectExit(blocked, 0);
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
