// Preemption: the bookkeeping of one preemption (who is still waited for, and the sync step
// once every task answered or left), without actors.
#include "muster/actors/health/preemption.h"

#include <cstdint>
#include <limits>
#include <optional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/task_name.h"

namespace muster {
namespace {

using ::testing::Optional;

proto::PreemptionNotice Notice() {
  proto::PreemptionNotice notice;
  *notice.mutable_notified_by() = MakeTask("worker", 0);
  notice.set_deadline_unix_ms(1700000000000);
  notice.set_reason("spot instance reclaimed");
  return notice;
}

Preemption Waiting(absl::flat_hash_set<uint32_t> indices) {
  return Preemption(Notice(), std::move(indices));
}

TEST(PreemptionTest, EveryTaskAnswers_SyncStepIsMaxAnsweredStepPlusOne) {
  Preemption preemption = Waiting({0, 1, 2});
  EXPECT_EQ(preemption.Answer(0, 5), std::nullopt);
  EXPECT_EQ(preemption.Answer(1, 9), std::nullopt);
  EXPECT_EQ(preemption.sync_step(), std::nullopt);
  EXPECT_THAT(preemption.Answer(2, 7), Optional(10));
  EXPECT_THAT(preemption.sync_step(), Optional(10));
}

TEST(PreemptionTest, Notice_KeptAsGiven) {
  Preemption preemption = Waiting({0});
  EXPECT_EQ(TaskName(preemption.notice().notified_by()), "/job:worker/task:0");
  EXPECT_EQ(preemption.notice().deadline_unix_ms(), 1700000000000);
  EXPECT_EQ(preemption.notice().reason(), "spot instance reclaimed");
}

TEST(PreemptionTest, TasksWithoutAStep_Ignored) {
  Preemption preemption = Waiting({0, 1, 2});
  EXPECT_EQ(preemption.Answer(0, std::nullopt), std::nullopt);
  EXPECT_EQ(preemption.Answer(1, 4), std::nullopt);
  EXPECT_THAT(preemption.Answer(2, std::nullopt), Optional(5));
}

TEST(PreemptionTest, NoTaskReportsSteps_SyncStepZero) {
  Preemption preemption = Waiting({0, 1});
  EXPECT_EQ(preemption.Answer(0, std::nullopt), std::nullopt);
  EXPECT_THAT(preemption.Answer(1, std::nullopt), Optional(0));
  EXPECT_THAT(preemption.sync_step(), Optional(0));
}

TEST(PreemptionTest, StepZeroAnswered_SyncStepOne) {
  Preemption preemption = Waiting({0, 1});
  EXPECT_EQ(preemption.Answer(0, 0), std::nullopt);
  EXPECT_THAT(preemption.Answer(1, std::nullopt), Optional(1));
}

TEST(PreemptionTest, NegativeSteps_MaxPlusOne) {
  Preemption preemption = Waiting({0, 1});
  EXPECT_EQ(preemption.Answer(0, -10), std::nullopt);
  EXPECT_THAT(preemption.Answer(1, -3), Optional(-2));
}

TEST(PreemptionTest, DroppedTask_NoLongerWaitedForAndItsDropDecides) {
  Preemption preemption = Waiting({0, 1});
  EXPECT_TRUE(preemption.IsWaitingFor(1));
  EXPECT_EQ(preemption.Answer(0, 3), std::nullopt);
  EXPECT_FALSE(preemption.IsWaitingFor(0));
  EXPECT_THAT(preemption.Drop(1), Optional(4));
  EXPECT_FALSE(preemption.IsWaitingFor(1));
  EXPECT_THAT(preemption.sync_step(), Optional(4));
}

TEST(PreemptionTest, DroppedTask_ItsLaterAnswerIgnored) {
  Preemption preemption = Waiting({0, 1, 2});
  EXPECT_EQ(preemption.Drop(2), std::nullopt);
  EXPECT_EQ(preemption.Answer(2, 100), std::nullopt);  // left before answering: not counted
  EXPECT_EQ(preemption.Answer(0, 1), std::nullopt);
  EXPECT_THAT(preemption.Answer(1, 2), Optional(3));
}

TEST(PreemptionTest, EveryTaskDropped_SyncStepZero) {
  Preemption preemption = Waiting({4, 5});
  EXPECT_EQ(preemption.Drop(4), std::nullopt);
  EXPECT_THAT(preemption.Drop(5), Optional(0));
}

TEST(PreemptionTest, DuplicateAnswer_IgnoredAndNotCounted) {
  Preemption preemption = Waiting({0, 1});
  EXPECT_EQ(preemption.Answer(0, 5), std::nullopt);
  EXPECT_EQ(preemption.Answer(0, 50), std::nullopt);  // a second answer of task 0
  EXPECT_EQ(preemption.Drop(0), std::nullopt);        // it already answered
  EXPECT_TRUE(preemption.IsWaitingFor(1));
  EXPECT_THAT(preemption.Answer(1, 6), Optional(7));  // not 51
}

TEST(PreemptionTest, AnswerOfATaskNotWaitedFor_Ignored) {
  Preemption preemption = Waiting({0});
  EXPECT_EQ(preemption.Answer(7, 100), std::nullopt);
  EXPECT_EQ(preemption.Drop(8), std::nullopt);
  EXPECT_EQ(preemption.sync_step(), std::nullopt);
  EXPECT_THAT(preemption.Answer(0, 1), Optional(2));
}

TEST(PreemptionTest, AnswersAfterTheDecision_IgnoredSyncStepUnchanged) {
  Preemption preemption = Waiting({0, 1});
  EXPECT_EQ(preemption.Answer(0, 1), std::nullopt);
  EXPECT_THAT(preemption.Answer(1, 2), Optional(3));
  EXPECT_EQ(preemption.Answer(1, 100), std::nullopt);
  EXPECT_EQ(preemption.Answer(2, 100), std::nullopt);
  EXPECT_EQ(preemption.Drop(0), std::nullopt);
  EXPECT_THAT(preemption.sync_step(), Optional(3));
}

TEST(PreemptionTest, EmptyWaitingSet_DecidedAtOnceZero) {
  Preemption preemption = Waiting({});
  EXPECT_THAT(preemption.sync_step(), Optional(0));
  EXPECT_EQ(preemption.Answer(0, 9), std::nullopt);
  EXPECT_EQ(preemption.Drop(0), std::nullopt);
  EXPECT_THAT(preemption.sync_step(), Optional(0));
}

TEST(PreemptionTest, MaxStepIsInt64Max_SyncStepStaysThere) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  Preemption preemption = Waiting({0, 1});
  EXPECT_EQ(preemption.Answer(0, kMax), std::nullopt);
  EXPECT_THAT(preemption.Answer(1, 3), Optional(kMax));
}

}  // namespace
}  // namespace muster
