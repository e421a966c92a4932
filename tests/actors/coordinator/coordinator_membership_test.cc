// The coordinator's elastic jobs on simulated time: the job forms after its settle time, a late
// task is admitted at the safe point, a member that leaves is a new membership pushed to every
// agent, and every misuse gets its status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/requests/wire_timeouts.h"
#include "tests/actors/leader_fixture.h"

namespace muster::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<int32_t> Members(const proto::JobMembership& m) {
  return {m.members().begin(), m.members().end()};
}
std::vector<int32_t> Waiting(const proto::JobMembership& m) {
  return {m.waiting().begin(), m.waiting().end()};
}

class CoordinatorMembershipTest : public LeaderTest {
 protected:
  // worker is elastic, 2 to 4 tasks, settling 5 s; ps has one task of fixed size.
  void SetUp() override {
    proto::CoordinationServiceConfig config = Config(4);
    config.mutable_coordinated_job_list(0)->set_min_tasks(2);
    config.set_membership_settle_ms(5'000);
    Spawn(config);
  }

  std::shared_ptr<Events> Join(int id) {
    auto events = std::make_shared<Events>();
    auto agent = AgentWithEvents(events);
    EXPECT_TRUE(Register("worker", id, 100 + id, agent).ok());
    return events;
  }

  proto::WaitForMembershipRequest SafePoint(const std::string& job, int id, int64_t known,
                                            int64_t timeout_ms = 0) {
    proto::WaitForMembershipRequest request;
    *request.mutable_source_task() = MakeTask(job, id);
    request.set_known_version(known);
    request.set_timeout_in_ms(timeout_ms);
    return request;
  }

  Reply<proto::WaitForMembershipResponse> Wait(int id, int64_t known, int64_t timeout_ms = 0) {
    return Send<proto::WaitForMembershipResponse>(leader_,
                                                  SafePoint("worker", id, known, timeout_ms));
  }

  proto::JobMembership Now(const std::string& job = "worker") {
    proto::GetMembershipRequest request;
    request.set_job_name(job);
    auto reply = Call<proto::GetMembershipResponse>(leader_, request);
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.ok() ? reply->membership() : proto::JobMembership{};
  }

  // Forms the job of tasks 0 and 1 (version 1).
  std::vector<std::shared_ptr<Events>> Formed() {
    std::vector<std::shared_ptr<Events>> events = {Join(0), Join(1)};
    AdvanceTime(5s);
    EXPECT_EQ(Now().version(), 1);
    return events;
  }
};

TEST_F(CoordinatorMembershipTest, FormsAfterTheSettleTime_AndTellsEveryAgent) {
  auto first = Join(0);
  auto second = Join(1);
  proto::JobMembership before = Now();
  EXPECT_EQ(before.version(), 0);
  EXPECT_THAT(Members(before), IsEmpty());
  EXPECT_THAT(Waiting(before), ElementsAre(0, 1));
  EXPECT_EQ(before.min_tasks(), 2);
  EXPECT_EQ(before.max_tasks(), 4);
  auto early = Wait(0, 0);  // not a member yet: waits for the job to form
  AdvanceTime(4s);
  EXPECT_FALSE(early->has_value());
  EXPECT_EQ(Now().version(), 0);
  AdvanceTime(1s);
  proto::JobMembership formed = Now();
  EXPECT_EQ(formed.version(), 1);
  EXPECT_THAT(Members(formed), ElementsAre(0, 1));
  ASSERT_TRUE(early->has_value());
  ASSERT_TRUE(early->value().ok()) << early->value().status();
  EXPECT_EQ(early->value()->membership().version(), 1);
  for (const auto& events : {first, second}) {
    ASSERT_EQ(events->memberships.size(), 1u);
    EXPECT_THAT(Members(events->memberships[0]), ElementsAre(0, 1));
  }
}

TEST_F(CoordinatorMembershipTest, ALateTaskIsAdmittedWhenEveryMemberReachedTheSafePoint) {
  auto events = Formed();
  auto late = Join(3);
  EXPECT_THAT(Waiting(Now()), ElementsAre(3));
  auto late_wait = Wait(3, 0);
  auto zero = Wait(0, 1);
  EXPECT_FALSE(late_wait->has_value());
  EXPECT_FALSE(zero->has_value());
  auto one = Wait(1, 1);  // the last member: the new membership answers all three
  for (const auto& reply : {late_wait, zero, one}) {
    ASSERT_TRUE(reply->has_value());
    ASSERT_TRUE(reply->value().ok()) << reply->value().status();
    EXPECT_EQ(reply->value()->membership().version(), 2);
    EXPECT_THAT(Members(reply->value()->membership()), ElementsAre(0, 1, 3));
  }
  ASSERT_EQ(late->memberships.size(), 1u);
  EXPECT_EQ(late->memberships[0].version(), 2);
  EXPECT_EQ(events[0]->memberships.back().version(), 2);
}

TEST_F(CoordinatorMembershipTest, WithNobodyWaiting_TheSafePointAnswersAtOnce) {
  Formed();
  auto reply = Wait(0, 1);
  ASSERT_TRUE(reply->has_value());
  ASSERT_TRUE(reply->value().ok());
  EXPECT_EQ(reply->value()->membership().version(), 1);
}

TEST_F(CoordinatorMembershipTest, AMemberLeaving_AnswersTheWaitingMembersWithTheSurvivors) {
  auto events = Formed();
  Join(2);
  auto zero = Wait(0, 1);
  EXPECT_FALSE(zero->has_value());
  EXPECT_TRUE(
      (TaskCall<proto::ShutdownTaskResponse, proto::ShutdownTaskRequest>("worker", 1)).ok());
  ASSERT_TRUE(zero->has_value());
  ASSERT_TRUE(zero->value().ok()) << zero->value().status();
  EXPECT_EQ(zero->value()->membership().version(), 2);
  EXPECT_THAT(Members(zero->value()->membership()), ElementsAre(0, 2));
  EXPECT_THAT(Members(events[0]->memberships.back()), ElementsAre(0, 2));
  // The job tolerates it: nothing was pushed as an error, and the leaver may come back.
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_DISCONNECTED);
}

TEST_F(CoordinatorMembershipTest, FewerThanTheMinimumLeft_NoMembersUntilItFormsAgain) {
  Formed();
  EXPECT_TRUE(
      (TaskCall<proto::ShutdownTaskResponse, proto::ShutdownTaskRequest>("worker", 1)).ok());
  proto::JobMembership dissolved = Now();
  EXPECT_EQ(dissolved.version(), 2);
  EXPECT_THAT(Members(dissolved), IsEmpty());
  auto zero = Wait(0, 2);
  EXPECT_FALSE(zero->has_value());
  Join(3);
  AdvanceTime(5s);
  ASSERT_TRUE(zero->has_value());
  ASSERT_TRUE(zero->value().ok()) << zero->value().status();
  EXPECT_EQ(zero->value()->membership().version(), 3);
  EXPECT_THAT(Members(zero->value()->membership()), ElementsAre(0, 3));
}

TEST_F(CoordinatorMembershipTest, ATimeoutNamesTheMembersThatDidNotArrive) {
  Formed();
  Join(2);
  auto zero = Wait(0, 1, 2'000);
  AdvanceTime(2s);
  ASSERT_TRUE(zero->has_value());
  EXPECT_EQ(zero->value().status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(zero->value().status().message(), HasSubstr("members 1 did not reach"));
  // Its arrival was withdrawn: the next safe point waits for task 0 again.
  auto one = Wait(1, 1);
  EXPECT_FALSE(one->has_value());
}

TEST_F(CoordinatorMembershipTest, WhenTheTaskThatWaitedLeaves_TheMembersAtTheSafePointGoOn) {
  Formed();
  Join(2);
  auto zero = Wait(0, 1);
  EXPECT_FALSE(zero->has_value());
  EXPECT_TRUE(
      (TaskCall<proto::ShutdownTaskResponse, proto::ShutdownTaskRequest>("worker", 2)).ok());
  ASSERT_TRUE(zero->has_value());
  ASSERT_TRUE(zero->value().ok()) << zero->value().status();
  EXPECT_EQ(zero->value()->membership().version(), 1);
  EXPECT_THAT(Members(zero->value()->membership()), ElementsAre(0, 1));
}

TEST_F(CoordinatorMembershipTest, ANewIncarnationEndsTheCallOfTheOldOne) {
  Formed();
  Join(2);
  auto old = Wait(2, 0);
  EXPECT_FALSE(old->has_value());
  auto events = std::make_shared<Events>();
  ASSERT_TRUE(Register("worker", 2, 999, AgentWithEvents(events)).ok());
  ASSERT_TRUE(old->has_value());
  EXPECT_EQ(old->value().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(old->value().status().message(),
              ::testing::AnyOf(HasSubstr("registered a new incarnation"),
                               HasSubstr("left while it waited")));
  auto renewed = Wait(2, 0);  // the new incarnation's own call waits to be admitted
  EXPECT_FALSE(renewed->has_value());
}

TEST_F(CoordinatorMembershipTest, ALaterCallOfTheSameTaskTakesThePlaceOfTheFirst) {
  Formed();
  Join(2);
  auto first = Wait(0, 1);
  auto second = Wait(0, 1);
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ(first->value().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(first->value().status().message(), HasSubstr("took the place of this one"));
  EXPECT_FALSE(second->has_value());
  auto one = Wait(1, 1);
  ASSERT_TRUE(second->has_value());
  ASSERT_TRUE(second->value().ok());
  EXPECT_EQ(second->value()->membership().version(), 2);
}

TEST_F(CoordinatorMembershipTest, AVersionAheadOfTheJobs_FromBeforeALeaderRestart_GetsTheCurrent) {
  Formed();
  auto reply = Call<proto::WaitForMembershipResponse>(leader_, SafePoint("worker", 0, 9));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->membership().version(), 1);
}

TEST_F(CoordinatorMembershipTest, MisuseGetsItsStatus) {
  Formed();
  auto code = [&](const proto::WaitForMembershipRequest& request) {
    return Call<proto::WaitForMembershipResponse>(leader_, request).status().code();
  };
  EXPECT_EQ(code(SafePoint("ps", 0, 0)), absl::StatusCode::kInvalidArgument);      // fixed size
  EXPECT_EQ(code(SafePoint("worker", 9, 0)), absl::StatusCode::kInvalidArgument);  // unknown
  EXPECT_EQ(code(SafePoint("worker", 0, -1)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(SafePoint("worker", 0, 1, -5)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(SafePoint("worker", 0, 1, kMaxMembershipTimeoutMs + 1)),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(SafePoint("worker", 2, 0)), absl::StatusCode::kFailedPrecondition);  // not in
  proto::GetMembershipRequest fixed;
  fixed.set_job_name("ps");
  EXPECT_EQ(Call<proto::GetMembershipResponse>(leader_, fixed).status().code(),
            absl::StatusCode::kInvalidArgument);
  // WaitForAllTasks waits for every configured task, which an elastic job may never have: it
  // is refused for every task of the cluster, not only the elastic job's.
  auto all = TaskCall<proto::WaitForAllTasksResponse, proto::WaitForAllTasksRequest>("worker", 0);
  EXPECT_EQ(all.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(all.status().message(), HasSubstr("elastic"));
  auto ps = std::make_shared<Events>();
  ASSERT_TRUE(Register("ps", 0, 500, AgentWithEvents(ps)).ok());
  EXPECT_EQ((TaskCall<proto::WaitForAllTasksResponse, proto::WaitForAllTasksRequest>("ps", 0))
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

// Past a restart intensity the job of an elastic task fails as any job: the failures that are
// tolerated for the membership's sake still count, and the last one ends the job.
using ElasticIntensityTest = LeaderTest;

TEST_F(ElasticIntensityTest, PastTheRestartIntensityTheElasticJobFails) {
  proto::CoordinationServiceConfig config = Config(3);
  config.mutable_coordinated_job_list(0)->set_min_tasks(1);
  config.set_membership_settle_ms(1);
  Spawn(config,
        std::make_shared<RestartIntensity>(std::make_unique<OneForAll>(), 1, absl::Minutes(1)));
  Reports reports[3];
  for (int id = 0; id < 3; ++id) {
    ASSERT_TRUE(Register("worker", id, 100 + id, Agent(&reports[id])).ok());
  }
  auto fail = [&](int id) {
    proto::ReportErrorToServiceRequest report;
    report.set_error_code(static_cast<int>(absl::StatusCode::kInternal));
    report.set_error_message("boom");
    *report.mutable_error_origin() = MakeTask("worker", id);
    return Call<proto::ReportErrorToServiceResponse>(leader_, report).status();
  };
  ASSERT_TRUE(fail(0).ok());  // tolerated: the job goes on with 1 and 2
  EXPECT_EQ(State("worker", 2).state(), proto::TASKSTATE_CONNECTED);
  EXPECT_TRUE(reports[2]->empty());
  ASSERT_TRUE(fail(1).ok());  // the second failure within the minute: the job fails
  EXPECT_EQ(State("worker", 2).state(), proto::TASKSTATE_ERROR);
  EXPECT_FALSE(reports[2]->empty());
}

}  // namespace
}  // namespace muster::testing
