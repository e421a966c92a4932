// ElasticMembership: forming after the settle time (or at max), members leaving, and late tasks
// admitted only when every member reached the safe point.
#include "muster/actors/cluster/elastic_membership.h"

#include <chrono>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace muster {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Arrival = ElasticMembership::Arrival;
using std::chrono::seconds;

const ElasticMembership::TimePoint kStart{};

std::vector<int32_t> Members(const ElasticMembership& job) {
  return {job.membership().members().begin(), job.membership().members().end()};
}
std::vector<int32_t> Waiting(const ElasticMembership& job) {
  return {job.membership().waiting().begin(), job.membership().waiting().end()};
}

TEST(ElasticMembershipTest, FormsSettleTimeAfterTheMinimumConnected_WithEveryConnectedTask) {
  ElasticMembership job("worker", 2, 4, seconds(5));
  EXPECT_FALSE(job.Connected(0, kStart));
  EXPECT_FALSE(job.settle_deadline().has_value());
  EXPECT_FALSE(job.Connected(2, kStart + seconds(1)));
  ASSERT_TRUE(job.settle_deadline().has_value());
  EXPECT_EQ(*job.settle_deadline(), kStart + seconds(6));
  EXPECT_FALSE(job.Connected(1, kStart + seconds(3)));  // the deadline stays where it was
  EXPECT_EQ(*job.settle_deadline(), kStart + seconds(6));
  EXPECT_FALSE(job.Settle(kStart + seconds(5)));
  EXPECT_EQ(job.version(), 0);
  EXPECT_THAT(Waiting(job), ElementsAre(0, 1, 2));
  EXPECT_TRUE(job.Settle(kStart + seconds(6)));
  EXPECT_EQ(job.version(), 1);
  EXPECT_THAT(Members(job), ElementsAre(0, 1, 2));
  EXPECT_THAT(Waiting(job), IsEmpty());
  EXPECT_FALSE(job.settle_deadline().has_value());
  EXPECT_EQ(job.membership().job_name(), "worker");
  EXPECT_EQ(job.membership().min_tasks(), 2);
  EXPECT_EQ(job.membership().max_tasks(), 4);
}

TEST(ElasticMembershipTest, FormsAtOnceWhenEveryTaskConnected) {
  ElasticMembership job("worker", 1, 2, seconds(30));
  EXPECT_FALSE(job.Connected(1, kStart));
  EXPECT_TRUE(job.Connected(0, kStart));
  EXPECT_EQ(job.version(), 1);
  EXPECT_THAT(Members(job), ElementsAre(0, 1));
}

TEST(ElasticMembershipTest, ZeroSettleTimeFormsAtTheMinimum) {
  ElasticMembership job("worker", 2, 8, seconds(0));
  EXPECT_FALSE(job.Connected(5, kStart));
  EXPECT_TRUE(job.Connected(3, kStart));
  EXPECT_THAT(Members(job), ElementsAre(3, 5));
}

TEST(ElasticMembershipTest, DroppingBelowTheMinimumWhileSettlingCancelsTheDeadline) {
  ElasticMembership job("worker", 2, 4, seconds(5));
  job.Connected(0, kStart);
  job.Connected(1, kStart);
  EXPECT_FALSE(job.Left(1));
  EXPECT_FALSE(job.settle_deadline().has_value());
  EXPECT_FALSE(job.Settle(kStart + seconds(10)));
  EXPECT_EQ(job.version(), 0);
  job.Connected(1, kStart + seconds(20));
  EXPECT_EQ(*job.settle_deadline(), kStart + seconds(25));
}

TEST(ElasticMembershipTest, AMemberLeaving_IsANewVersionOfTheRestAndAdmitsTheWaiting) {
  ElasticMembership job("worker", 2, 4, seconds(0));
  job.Connected(0, kStart);
  job.Connected(1, kStart);
  job.Connected(2, kStart);  // after the job formed: waits
  EXPECT_THAT(Members(job), ElementsAre(0, 1));
  EXPECT_THAT(Waiting(job), ElementsAre(2));
  EXPECT_TRUE(job.Left(0));
  EXPECT_EQ(job.version(), 2);
  EXPECT_THAT(Members(job), ElementsAre(1, 2));
  EXPECT_THAT(Waiting(job), IsEmpty());
}

TEST(ElasticMembershipTest, AWaitingTaskLeavingChangesNothing) {
  ElasticMembership job("worker", 1, 4, seconds(0));
  job.Connected(0, kStart);
  job.Connected(3, kStart);
  EXPECT_FALSE(job.Left(3));
  EXPECT_EQ(job.version(), 1);
  EXPECT_THAT(Waiting(job), IsEmpty());
  EXPECT_FALSE(job.Left(3));  // not connected: nothing
}

TEST(ElasticMembershipTest, BelowTheMinimum_NoMembersUntilItFormsAgain) {
  ElasticMembership job("worker", 2, 3, seconds(2));
  job.Connected(0, kStart);
  job.Connected(1, kStart);
  job.Connected(2, kStart);
  ASSERT_EQ(job.version(), 1);
  EXPECT_TRUE(job.Left(2));
  EXPECT_EQ(job.version(), 2);
  EXPECT_TRUE(job.Left(1));
  EXPECT_EQ(job.version(), 3);
  EXPECT_FALSE(job.formed());
  EXPECT_THAT(Members(job), IsEmpty());
  EXPECT_THAT(Waiting(job), ElementsAre(0));
  EXPECT_EQ(job.Arrive(0, 3), Arrival::kWait);  // not a member: waits for the next one
  EXPECT_FALSE(job.Connected(1, kStart + seconds(10)));
  EXPECT_TRUE(job.Settle(kStart + seconds(12)));
  EXPECT_EQ(job.version(), 4);
  EXPECT_THAT(Members(job), ElementsAre(0, 1));
}

TEST(ElasticMembershipTest, SafePoint_AnswersAtOnceWithoutWaitingTasksOrAfterAChange) {
  ElasticMembership job("worker", 2, 4, seconds(0));
  job.Connected(0, kStart);
  job.Connected(1, kStart);
  EXPECT_EQ(job.Arrive(0, 1), Arrival::kAnswer);  // nobody waits
  EXPECT_EQ(job.Arrive(0, 0), Arrival::kAnswer);  // an older version: the news
  EXPECT_THAT(job.NotArrived(), ElementsAre(0, 1));
}

TEST(ElasticMembershipTest, SafePoint_AVersionAheadFromBeforeALeaderRestartIsOutOfDate) {
  ElasticMembership job("worker", 1, 2, seconds(0));
  job.Connected(0, kStart);
  job.Connected(1, kStart);
  EXPECT_EQ(job.Arrive(0, 7), Arrival::kAnswer);
}

TEST(ElasticMembershipTest, Release_TheMembersGoOnWhenTheTaskTheyWaitedForLeft) {
  ElasticMembership job("worker", 2, 4, seconds(0));
  job.Connected(0, kStart);
  job.Connected(1, kStart);
  job.Connected(2, kStart);
  EXPECT_FALSE(job.Release());  // a task waits
  EXPECT_EQ(job.Arrive(0, 1), Arrival::kWait);
  EXPECT_FALSE(job.Left(2));
  EXPECT_TRUE(job.Release());
  EXPECT_FALSE(job.Release());  // once
  EXPECT_EQ(job.version(), 1);
  EXPECT_THAT(job.NotArrived(), ElementsAre(0, 1));
}

TEST(ElasticMembershipTest, SafePoint_AdmitsTheWaitingOnceEveryMemberArrived) {
  ElasticMembership job("worker", 2, 4, seconds(0));
  job.Connected(0, kStart);
  job.Connected(1, kStart);
  job.Connected(3, kStart);
  EXPECT_EQ(job.Arrive(3, 0), Arrival::kWait);  // not admitted yet
  EXPECT_EQ(job.Arrive(1, 1), Arrival::kWait);
  EXPECT_THAT(job.NotArrived(), ElementsAre(0));
  EXPECT_EQ(job.Arrive(0, 1), Arrival::kChanged);
  EXPECT_EQ(job.version(), 2);
  EXPECT_THAT(Members(job), ElementsAre(0, 1, 3));
  EXPECT_THAT(job.NotArrived(), ElementsAre(0, 1, 3));  // a new safe point
}

TEST(ElasticMembershipTest, SafePoint_AWithdrawnMemberIsAwaitedAgain) {
  ElasticMembership job("worker", 2, 4, seconds(0));
  job.Connected(0, kStart);
  job.Connected(1, kStart);
  job.Connected(2, kStart);
  EXPECT_EQ(job.Arrive(0, 1), Arrival::kWait);
  job.Withdraw(0);
  EXPECT_EQ(job.Arrive(1, 1), Arrival::kWait);
  EXPECT_THAT(job.NotArrived(), ElementsAre(0));
  EXPECT_EQ(job.Arrive(0, 1), Arrival::kChanged);
  EXPECT_THAT(Members(job), ElementsAre(0, 1, 2));
}

TEST(ElasticMembershipTest, SafePoint_AMemberLeavingWhileOthersWaitIsTheChange) {
  ElasticMembership job("worker", 2, 4, seconds(0));
  job.Connected(0, kStart);
  job.Connected(1, kStart);
  job.Connected(2, kStart);
  job.Connected(3, kStart);
  EXPECT_EQ(job.Arrive(0, 1), Arrival::kWait);
  EXPECT_TRUE(job.Left(1));
  EXPECT_EQ(job.version(), 2);
  EXPECT_THAT(Members(job), ElementsAre(0, 2, 3));
  EXPECT_THAT(job.NotArrived(), ElementsAre(0, 2, 3));
}

}  // namespace
}  // namespace muster
