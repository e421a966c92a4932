// ProgressTracker: the stuck rule over the steps tasks report (STALLED, counted from when
// another task moved past the step, and LAGGING; once per step, per job), and the error a
// stuck task fails with. No actors and no real clock: every time point is built from a fixed
// origin.
#include "muster/actors/health/progress_tracker.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using namespace std::chrono_literals;

using TimePoint = ProgressTracker::TimePoint;
using Duration = ProgressTracker::Duration;

// A fixed origin, far from the clock's epoch; no test reads a real clock.
const TimePoint kT0 = TimePoint{} + 1h;

TimePoint At(Duration offset) { return kT0 + offset; }

StuckPolicy Policy(Duration stuck_after, int64_t max_step_lag = 0, Duration grace = 0s) {
  StuckPolicy policy;
  policy.stuck_after = stuck_after;
  policy.max_step_lag = max_step_lag;
  policy.grace = grace;
  return policy;
}

// "<REASON> <task> @<step>" per stuck task, for compact comparisons.
std::vector<std::string> Describe(const std::vector<proto::TaskStuck>& stuck) {
  std::vector<std::string> lines;
  for (const proto::TaskStuck& report : stuck) {
    lines.push_back(absl::StrCat(proto::TaskStuck::Reason_Name(report.reason()), " ",
                                 TaskName(report.task()), " @", report.step()));
  }
  return lines;
}

class ProgressTrackerTest : public ::testing::Test {
 protected:
  // Task `id` of job "worker" sits at cluster index `id`; job "ps" starts at index 10.
  void Worker(uint32_t id, int64_t step, Duration at) {
    tracker_.Report(id, MakeTask("worker", static_cast<int>(id)), step, At(at));
  }
  void Ps(uint32_t id, int64_t step, Duration at) {
    tracker_.Report(10 + id, MakeTask("ps", static_cast<int>(id)), step, At(at));
  }
  std::vector<std::string> FindStuck(Duration at) { return Describe(tracker_.FindStuck(At(at))); }

  // A job of `workers` tasks whose steps are `step_at(id, time)`, each sending its step on a
  // heartbeat every 2 s (worker i at i * `spacing` into the interval), as the leader sees it:
  // the beats in time order, FindStuck asked every 100 ms (the check period) until `until`.
  // Returns "<ms>ms <REASON> <task> @<step>" for each stuck task found.
  std::vector<std::string> RunJob(uint32_t workers, Duration spacing, Duration until,
                                  const std::function<int64_t(uint32_t, Duration)>& step_at) {
    std::vector<std::string> found;
    for (Duration t = 0ms; t <= until; t += 50ms) {
      for (uint32_t id = 0; id < workers; ++id) {
        Duration phase = (spacing * id) % 2s;
        if (t >= phase && (t - phase) % 2s == 0ms) Worker(id, step_at(id, t), t);
      }
      if (t % 100ms != 0ms) continue;
      for (const std::string& line : FindStuck(t)) {
        found.push_back(absl::StrCat(t / 1ms, "ms ", line));
      }
    }
    return found;
  }

  ProgressTracker tracker_{Policy(10s)};
};

TEST_F(ProgressTrackerTest, Stalled_CountsFromWhenAnotherTaskMovedPastIt_ExactlyAtStuckAfter) {
  Worker(0, 5, 0s);
  Worker(1, 5, 0s);
  Worker(1, 6, 9s);  // moves past worker 0
  EXPECT_EQ(tracker_.PassedAt(0), At(9s));
  EXPECT_EQ(tracker_.PassedAt(1), std::nullopt);
  EXPECT_THAT(FindStuck(10s), IsEmpty());  // its step is 10 s old, but it was passed 1 s ago
  EXPECT_THAT(FindStuck(19s - 1ms), IsEmpty());
  std::vector<proto::TaskStuck> stuck = tracker_.FindStuck(At(19s));
  ASSERT_THAT(Describe(stuck), ElementsAre("STALLED /job:worker/task:0 @5"));
  EXPECT_EQ(stuck[0].stalled_for_ms(), 19000);  // since its own step changed
}

TEST_F(ProgressTrackerTest, Grace_TheHeartbeatIntervalIsAddedToStuckAfter) {
  tracker_.set_policy(Policy(10s, 0, 2s));
  Worker(0, 5, 0s);
  Worker(1, 5, 0s);
  Worker(1, 6, 1s);
  EXPECT_THAT(FindStuck(13s - 1ms), IsEmpty());
  EXPECT_THAT(FindStuck(13s), ElementsAre("STALLED /job:worker/task:0 @5"));
}

TEST_F(ProgressTrackerTest, OthersMovePastItThenWaitForIt_StillStuck) {
  // Worker 2 hangs in step 100; the others enter step 101 and wait for it in a collective.
  Worker(0, 100, 0s);
  Worker(1, 100, 0s);
  Worker(2, 100, 0s);
  Worker(0, 101, 1s);
  Worker(1, 101, 1s);
  EXPECT_THAT(FindStuck(11s - 1ms), IsEmpty());
  EXPECT_THAT(FindStuck(11s), ElementsAre("STALLED /job:worker/task:2 @100"));
  EXPECT_THAT(FindStuck(1h), IsEmpty());  // reported once; the waiting tasks were never passed
}

TEST_F(ProgressTrackerTest, Stalled_ReportFields_StepStalledForOthersAndMedian) {
  Worker(0, 3, 0s);
  Worker(1, 10, 0s);
  Worker(2, 12, 0s);
  Worker(3, 19, 0s);
  Worker(3, 20, 15s);
  // Workers 0, 1 and 2 are all behind worker 3, which moved past them 10 s ago; each is
  // reported (in cluster order), each with the steps of the others.
  std::vector<proto::TaskStuck> stuck = tracker_.FindStuck(At(25s));
  EXPECT_THAT(Describe(stuck),
              ElementsAre("STALLED /job:worker/task:0 @3", "STALLED /job:worker/task:1 @10",
                          "STALLED /job:worker/task:2 @12"));
  const proto::TaskStuck& report = stuck.at(0);
  EXPECT_EQ(report.reason(), proto::TaskStuck::STALLED);
  EXPECT_EQ(TaskName(report.task()), "/job:worker/task:0");
  EXPECT_EQ(report.step(), 3);
  EXPECT_EQ(report.stalled_for_ms(), 25000);
  EXPECT_EQ(report.min_other_step(), 10);
  EXPECT_EQ(report.max_other_step(), 20);
  EXPECT_EQ(report.median_step(), 11);  // steps 3, 10, 12, 20: (10 + 12) / 2
  EXPECT_EQ(stuck.at(1).min_other_step(), 3);
  EXPECT_EQ(stuck.at(1).max_other_step(), 20);
  EXPECT_EQ(stuck.at(2).min_other_step(), 3);
}

TEST_F(ProgressTrackerTest, AllTasksAdvanceTogether_NeverStuck) {
  for (int second = 0; second <= 120; ++second) {
    Duration at = std::chrono::seconds(second);
    for (uint32_t id = 0; id < 4; ++id) Worker(id, second, at + std::chrono::milliseconds(id));
    ASSERT_THAT(FindStuck(at + 5ms), IsEmpty()) << "at second " << second;
  }
}

TEST_F(ProgressTrackerTest, SlowStepsLongerThanStuckAfterInLockstep_NeverStuck) {
  // Every task takes 30 s per step (longer than stuck_after), all at the same time.
  for (int step = 0; step < 5; ++step) {
    Duration at = std::chrono::seconds(30 * step);
    Worker(0, step, at);
    Worker(1, step, at + 1ms);
    ASSERT_THAT(FindStuck(at + 29s), IsEmpty()) << "at step " << step;
  }
}

TEST_F(ProgressTrackerTest, StepLongerThanStuckAfter_StalledOnlyIfItFollowsTooLate) {
  // Every step takes 30 s, longer than stuck_after: what counts is how long after worker 1
  // worker 0 reaches the next step.
  Worker(0, 1, 0s);
  Worker(1, 1, 0s);
  Worker(1, 2, 30s);
  EXPECT_THAT(FindStuck(30s), IsEmpty());
  Worker(0, 2, 39s);
  EXPECT_THAT(FindStuck(59s), IsEmpty());
  Worker(1, 3, 60s);
  EXPECT_THAT(FindStuck(70s), ElementsAre("STALLED /job:worker/task:0 @2"));
}

TEST_F(ProgressTrackerTest, AllPaused_NobodyAdvancedWithinStuckAfter_NotStuck) {
  Worker(0, 5, 0s);
  Worker(1, 7, 0s);  // ahead, but paused too
  Worker(2, 7, 0s);
  EXPECT_THAT(FindStuck(10s), IsEmpty());
  EXPECT_THAT(FindStuck(1h), IsEmpty());
}

TEST_F(ProgressTrackerTest, FirstReportOfATaskAhead_PassesNobody) {
  Worker(0, 5, 0s);
  Worker(1, 6, 5s);  // where worker 1 is when it starts reporting: no move
  EXPECT_EQ(tracker_.PassedAt(0), std::nullopt);
  EXPECT_THAT(FindStuck(1h), IsEmpty());
  Worker(1, 7, 1h);  // its first move
  EXPECT_EQ(tracker_.PassedAt(0), At(1h));
}

// The steps of a job that steps every 50 ms and pauses as a whole at step 20 (at 1 s) for 3.5 s.
int64_t PauseAtStep20(uint32_t /*id*/, Duration at) {
  const int64_t ms = at / 1ms;
  return ms < 1000 ? ms / 50 : ms < 4500 ? 20 : 20 + (ms - 4500) / 50;
}

TEST_F(ProgressTrackerTest,
       WholeJobPausesLongerThanStuckAfter_ResumesWithStaggeredReports_NobodyStuck) {
  // muster serve --stuck-after 2s, heartbeats every 2 s. When the job resumes, the first beat
  // with a new step passes the others, whose new steps come up to a heartbeat later.
  for (Duration spacing : {0ms, 50ms, 300ms, 700ms, 1000ms, 1950ms}) {
    tracker_ = ProgressTracker(Policy(2s, 0, 2s));
    EXPECT_THAT(RunJob(3, spacing, 12s, PauseAtStep20), IsEmpty()) << "spacing " << spacing / 1ms;
  }
}

TEST_F(ProgressTrackerTest,
       OneTaskStopsWhileTheOthersGoOn_StuckAfterStuckAfterPlusGraceFromWhenPassed) {
  tracker_.set_policy(Policy(2s, 0, 2s));
  auto worker_2_stops_at_30 = [](uint32_t id, Duration at) {
    const int64_t step = at / 50ms;
    return id == 2 ? std::min<int64_t>(step, 30) : step;
  };
  // Worker 2 beats at 1.4 s (step 28) and 3.4 s (step 30, where it stays); worker 0's beat at
  // 4 s (step 80) is the first to move past 30: found at 4 s + 2 s + 2 s.
  EXPECT_THAT(RunJob(3, 700ms, 12s, worker_2_stops_at_30),
              ElementsAre("8000ms STALLED /job:worker/task:2 @30"));
}

TEST_F(ProgressTrackerTest, TaskAheadOfTheOthersStops_NotStalled) {
  Worker(0, 100, 0s);  // far ahead, then stops (e.g. waits for the others)
  for (int second = 0; second <= 30; ++second) {
    Worker(1, second, std::chrono::seconds(second));
    Worker(2, second, std::chrono::seconds(second));
  }
  EXPECT_THAT(FindStuck(30s), IsEmpty());
  EXPECT_EQ(tracker_.Step(0), 100);
  EXPECT_EQ(tracker_.StepChangedAt(0), At(0s));
}

TEST_F(ProgressTrackerTest, ReportOfTheSameStep_KeepsWhenItChanged) {
  Worker(0, 5, 0s);
  Worker(1, 5, 0s);
  Worker(0, 5, 6s);  // a heartbeat with the same step is no progress
  Worker(1, 6, 8s);
  Worker(0, 5, 12s);  // nor after it was passed
  EXPECT_EQ(tracker_.StepChangedAt(0), At(0s));
  EXPECT_EQ(tracker_.PassedAt(0), At(8s));
  std::vector<proto::TaskStuck> stuck = tracker_.FindStuck(At(18s));
  ASSERT_EQ(stuck.size(), 1u);
  EXPECT_EQ(stuck[0].stalled_for_ms(), 18000);
}

TEST_F(ProgressTrackerTest, Lagging_MoreThanMaxStepLagBehindMedian) {
  tracker_.set_policy(Policy(0s, 5));
  Worker(0, 14, 0s);
  Worker(1, 20, 0s);
  Worker(2, 20, 0s);
  std::vector<proto::TaskStuck> stuck = tracker_.FindStuck(At(2s));
  ASSERT_THAT(Describe(stuck), ElementsAre("LAGGING /job:worker/task:0 @14"));
  EXPECT_EQ(stuck[0].median_step(), 20);
  EXPECT_EQ(stuck[0].min_other_step(), 20);
  EXPECT_EQ(stuck[0].max_other_step(), 20);
  EXPECT_EQ(stuck[0].stalled_for_ms(), 2000);
}

TEST_F(ProgressTrackerTest, Lagging_ExactlyMaxStepLagBehind_NotStuck) {
  tracker_.set_policy(Policy(0s, 5));
  Worker(0, 15, 0s);
  Worker(1, 20, 0s);
  Worker(2, 20, 0s);
  EXPECT_THAT(FindStuck(1h), IsEmpty());
}

TEST_F(ProgressTrackerTest, Lagging_EvenCountMedianIsMeanOfMiddleTwoRoundedDown) {
  tracker_.set_policy(Policy(0s, 5));
  Worker(0, 0, 0s);
  Worker(1, 5, 0s);
  Worker(2, 6, 0s);
  Worker(3, 100, 0s);
  // steps 0, 5, 6, 100: median (5 + 6) / 2 = 5; worker 0 is exactly 5 behind.
  EXPECT_THAT(FindStuck(1s), IsEmpty());
  Worker(1, 7, 1s);  // steps 0, 6, 7, 100: median 6
  std::vector<proto::TaskStuck> stuck = tracker_.FindStuck(At(1s));
  ASSERT_THAT(Describe(stuck), ElementsAre("LAGGING /job:worker/task:0 @0"));
  EXPECT_EQ(stuck[0].median_step(), 6);
}

TEST_F(ProgressTrackerTest, Lagging_ExtremeSteps_NoOverflow) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  tracker_.set_policy(Policy(0s, kMax));
  Worker(0, kMin, 0s);
  Worker(1, kMax, 0s);
  Worker(2, kMax, 0s);
  // kMax - kMin does not fit in 64 bits; it is still more than any lag.
  std::vector<proto::TaskStuck> stuck = tracker_.FindStuck(At(1s));
  ASSERT_THAT(Describe(stuck), ElementsAre(absl::StrCat("LAGGING /job:worker/task:0 @", kMin)));
  EXPECT_EQ(stuck[0].median_step(), kMax);
  // Steps kMin and kMax alone: the median is their mean, -0.5, rounded down.
  tracker_.Forget(0);
  tracker_.Forget(2);
  tracker_.set_policy(Policy(0s, 1));
  Worker(0, kMin, 2s);
  stuck = tracker_.FindStuck(At(2s));
  ASSERT_THAT(Describe(stuck), ElementsAre(absl::StrCat("LAGGING /job:worker/task:0 @", kMin)));
  EXPECT_EQ(stuck[0].median_step(), -1);
}

TEST_F(ProgressTrackerTest, ReportedOnce_UntilItsStepChanges_ThenAgain) {
  Worker(0, 5, 0s);
  Worker(1, 5, 0s);
  Worker(1, 6, 1s);
  EXPECT_THAT(FindStuck(11s), ElementsAre("STALLED /job:worker/task:0 @5"));
  Worker(1, 7, 11s);
  EXPECT_THAT(FindStuck(12s), IsEmpty());  // still stalled, already reported
  Worker(0, 5, 13s);                       // same step: still reported
  EXPECT_THAT(FindStuck(14s), IsEmpty());
  Worker(0, 6, 15s);  // it moved: tracked again; worker 1 (at 7) is ahead but has not moved
  EXPECT_EQ(tracker_.PassedAt(0), std::nullopt);
  for (int second = 16; second <= 30; ++second) Worker(1, second, std::chrono::seconds(second));
  EXPECT_THAT(FindStuck(26s - 1ms), IsEmpty());
  std::vector<proto::TaskStuck> stuck = tracker_.FindStuck(At(26s));
  ASSERT_THAT(Describe(stuck), ElementsAre("STALLED /job:worker/task:0 @6"));
  EXPECT_EQ(stuck[0].stalled_for_ms(), 11000);
}

TEST_F(ProgressTrackerTest, LaggingReportedOnce_UntilItsStepChanges) {
  tracker_.set_policy(Policy(0s, 2));
  Worker(0, 0, 0s);
  Worker(1, 10, 0s);
  Worker(2, 10, 0s);
  EXPECT_THAT(FindStuck(1s), ElementsAre("LAGGING /job:worker/task:0 @0"));
  EXPECT_THAT(FindStuck(2s), IsEmpty());
  Worker(0, 1, 3s);  // still lagging, but its step changed
  EXPECT_THAT(FindStuck(3s), ElementsAre("LAGGING /job:worker/task:0 @1"));
}

TEST_F(ProgressTrackerTest, Forget_ClearsStepAndReport_NewIncarnationStartsAfresh) {
  Worker(0, 5, 0s);
  Worker(1, 5, 0s);
  Worker(1, 6, 0s);
  EXPECT_THAT(FindStuck(10s), ElementsAre("STALLED /job:worker/task:0 @5"));
  tracker_.Forget(0);
  EXPECT_EQ(tracker_.Step(0), std::nullopt);
  EXPECT_EQ(tracker_.StepChangedAt(0), std::nullopt);
  EXPECT_EQ(tracker_.PassedAt(0), std::nullopt);
  Worker(1, 7, 11s);
  EXPECT_THAT(FindStuck(12s), IsEmpty());  // worker 0 no longer tracked
  Worker(0, 5, 12s);                       // a new incarnation, same step: its first report
  EXPECT_EQ(tracker_.StepChangedAt(0), At(12s));
  EXPECT_EQ(tracker_.PassedAt(0), std::nullopt);  // worker 1 is ahead but has not moved since
  Worker(1, 8, 20s);
  EXPECT_THAT(FindStuck(30s - 1ms), IsEmpty());
  EXPECT_THAT(FindStuck(30s), ElementsAre("STALLED /job:worker/task:0 @5"));
}

TEST_F(ProgressTrackerTest, Forget_TaskThatMovedPastOthersLeaves_TheyWaitToBePassedAgain) {
  Worker(0, 5, 0s);
  Worker(1, 5, 0s);
  Worker(2, 5, 0s);
  Worker(3, 9, 0s);
  Worker(2, 6, 1s);  // passes workers 0 and 1, then fails: they wait for its replacement
  tracker_.Forget(2);
  EXPECT_EQ(tracker_.PassedAt(0), std::nullopt);
  EXPECT_EQ(tracker_.PassedAt(1), std::nullopt);
  EXPECT_THAT(FindStuck(1h), IsEmpty());
  Worker(2, 5, 1h);  // the new incarnation resumes from step 5 and moves on
  Worker(2, 6, 1h + 1s);
  EXPECT_THAT(FindStuck(1h + 11s),
              ElementsAre("STALLED /job:worker/task:0 @5", "STALLED /job:worker/task:1 @5"));
}

TEST_F(ProgressTrackerTest, Forget_UnknownIndex_NoEffect) {
  Worker(0, 5, 0s);
  tracker_.Forget(7);
  tracker_.Forget(1000);
  EXPECT_EQ(tracker_.Step(0), 5);
  EXPECT_EQ(tracker_.Step(7), std::nullopt);
  EXPECT_EQ(tracker_.Step(1000), std::nullopt);
}

TEST_F(ProgressTrackerTest, Forget_LastOtherTask_LeavesALoneTaskThatIsNeverStuck) {
  Worker(0, 5, 0s);
  Worker(1, 6, 9s);
  tracker_.Forget(1);
  EXPECT_THAT(FindStuck(10s), IsEmpty());
}

TEST_F(ProgressTrackerTest, JobsJudgedSeparately) {
  tracker_.set_policy(Policy(10s, 5));
  Worker(0, 5, 0s);  // the workers pause as a whole, far behind the ps tasks
  Worker(1, 5, 0s);
  for (int second = 0; second <= 30; ++second) {
    Ps(0, 1000 + second, std::chrono::seconds(second));
    Ps(1, 1000 + second, std::chrono::seconds(second));
  }
  EXPECT_THAT(FindStuck(30s), IsEmpty());
  // A worker that falls behind the other worker is found, compared with its own job only.
  Worker(1, 10, 30s);  // the median, 7, is within 5 steps of worker 0: not lagging
  EXPECT_THAT(FindStuck(40s - 1ms), IsEmpty());
  std::vector<proto::TaskStuck> stuck = tracker_.FindStuck(At(40s));
  ASSERT_THAT(Describe(stuck), ElementsAre("STALLED /job:worker/task:0 @5"));
  EXPECT_EQ(stuck[0].min_other_step(), 10);
  EXPECT_EQ(stuck[0].max_other_step(), 10);
  EXPECT_EQ(stuck[0].median_step(), 7);  // (5 + 10) / 2 rounded down
}

TEST_F(ProgressTrackerTest, LoneTaskOfItsJob_NeverStuck) {
  tracker_.set_policy(Policy(10s, 5));
  Worker(0, 0, 0s);
  for (int second = 0; second <= 60; ++second) {
    Ps(0, 1000 + second, std::chrono::seconds(second));
    Ps(1, 1000 + second, std::chrono::seconds(second));
  }
  EXPECT_THAT(FindStuck(60s), IsEmpty());
  EXPECT_THAT(FindStuck(24h), IsEmpty());
}

TEST_F(ProgressTrackerTest, PolicyZero_RulesOff) {
  tracker_.set_policy(StuckPolicy());
  EXPECT_FALSE(tracker_.policy().enabled());
  Worker(0, 0, 0s);
  Worker(1, 1000, 0s);
  Worker(2, 1000, 0s);
  Worker(1, 1001, 59s);
  Worker(2, 1001, 59s);
  EXPECT_THAT(FindStuck(60s), IsEmpty());  // stalled for 60 s and 1000 steps behind
}

TEST_F(ProgressTrackerTest, StuckAfterZero_OnlyLaggingRule) {
  tracker_.set_policy(Policy(0s, 100));
  Worker(0, 5, 0s);
  Worker(1, 6, 0s);
  Worker(1, 7, 59s);
  EXPECT_THAT(FindStuck(60s), IsEmpty());  // would be STALLED with a stuck_after
}

TEST_F(ProgressTrackerTest, MaxStepLagZero_OnlyStalledRule) {
  Worker(0, 0, 0s);
  Worker(1, 1000, 0s);
  Worker(2, 1000, 0s);
  EXPECT_THAT(FindStuck(1s), IsEmpty());  // far behind, but not stalled
}

TEST(StuckPolicyTest, FromConfig_ReadsBothRulesNegativeTurnsOff) {
  proto::CoordinationServiceConfig config;
  EXPECT_FALSE(StuckPolicy::FromConfig(config).enabled());
  config.set_stuck_after_ms(1500);
  config.set_max_step_lag(7);
  StuckPolicy policy = StuckPolicy::FromConfig(config);
  EXPECT_EQ(policy.stuck_after, Duration(1500ms));
  EXPECT_EQ(policy.max_step_lag, 7);
  EXPECT_TRUE(policy.enabled());
  config.set_stuck_after_ms(-1);
  config.set_max_step_lag(-3);
  policy = StuckPolicy::FromConfig(config);
  EXPECT_EQ(policy.stuck_after.count(), 0);
  EXPECT_EQ(policy.max_step_lag, 0);
  EXPECT_FALSE(policy.enabled());
}

proto::TaskStuck StuckReport(proto::TaskStuck::Reason reason) {
  proto::TaskStuck stuck;
  stuck.set_reason(reason);
  *stuck.mutable_task() = MakeTask("worker", 3);
  stuck.set_step(41);
  stuck.set_stalled_for_ms(90000);
  stuck.set_min_other_step(50);
  stuck.set_max_other_step(52);
  stuck.set_median_step(51);
  return stuck;
}

TEST(StuckTaskErrorTest, Stalled_DeadlineExceededNamingTaskStepAndPayload) {
  proto::TaskStuck stuck = StuckReport(proto::TaskStuck::STALLED);
  absl::Status status = StuckTaskError(stuck);
  EXPECT_THAT(
      status,
      StatusIs(absl::StatusCode::kDeadlineExceeded,
               AllOf(HasSubstr("Task /job:worker/task:3 is stuck"), HasSubstr("step 41"),
                     HasSubstr("1m30s"), HasSubstr("steps 50 to 52"), HasSubstr("median 51"),
                     HasSubstr("--stuck-after"), Not(HasSubstr("--max-step-lag")))));
  std::optional<proto::TaskStuck> payload = GetTaskStuck(status);
  ASSERT_TRUE(payload.has_value());
  EXPECT_EQ(payload->SerializeAsString(), stuck.SerializeAsString());
  std::optional<proto::CoordinationServiceError> error = GetCoordinationError(status);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(TaskName(error->source_task()), "/job:worker/task:3");
}

TEST(StuckTaskErrorTest, Lagging_NamesTheLagRule) {
  proto::TaskStuck stuck = StuckReport(proto::TaskStuck::LAGGING);
  absl::Status status = StuckTaskError(stuck);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kDeadlineExceeded,
                               AllOf(HasSubstr("Task /job:worker/task:3 is stuck"),
                                     HasSubstr("its step 41 lags the median"),
                                     HasSubstr("--max-step-lag"))));
  ASSERT_TRUE(GetTaskStuck(status).has_value());
  EXPECT_EQ(GetTaskStuck(status)->reason(), proto::TaskStuck::LAGGING);
}

TEST(StuckTaskErrorTest, FromFindStuck_RoundTripsThroughThePayload) {
  ProgressTracker tracker(Policy(10s));
  tracker.Report(0, MakeTask("worker", 0), 5, At(0s));
  tracker.Report(1, MakeTask("worker", 1), 5, At(0s));
  tracker.Report(1, MakeTask("worker", 1), 9, At(2s));
  std::vector<proto::TaskStuck> stuck = tracker.FindStuck(At(12s));
  ASSERT_EQ(stuck.size(), 1u);
  absl::Status status = StuckTaskError(stuck[0]);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kDeadlineExceeded,
                               AllOf(HasSubstr("/job:worker/task:0"), HasSubstr("step 5"),
                                     HasSubstr("12s"))));
  std::optional<proto::TaskStuck> payload = GetTaskStuck(status);
  ASSERT_TRUE(payload.has_value());
  EXPECT_EQ(payload->step(), 5);
  EXPECT_EQ(payload->stalled_for_ms(), 12000);
  EXPECT_EQ(payload->max_other_step(), 9);
}

TEST(StuckTaskErrorTest, GetTaskStuck_OtherStatuses_Nullopt) {
  EXPECT_FALSE(GetTaskStuck(absl::OkStatus()).has_value());
  EXPECT_FALSE(GetTaskStuck(absl::DeadlineExceededError("slow")).has_value());
  EXPECT_FALSE(GetTaskStuck(MakeCoordinationError(absl::InternalError("x"), MakeTask("worker", 0)))
                   .has_value());
}

}  // namespace
}  // namespace muster
