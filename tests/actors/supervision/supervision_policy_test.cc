// The built-in supervision policies, as plain functions of (task, error, time).
#include "muster/actors/supervision/supervision_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/task_name.h"

namespace muster {
namespace {

using ::testing::HasSubstr;

const absl::Status kLost = absl::UnavailableError("lost");
const absl::Time kT0 = absl::FromUnixSeconds(1000);

TEST(SupervisionPolicyTest, FateSharing_PropagatesToCluster) {
  FateSharing policy;
  auto decision = policy.OnTaskFailure(MakeTask("worker", 1), kLost, kT0);
  EXPECT_EQ(decision.action, FailureAction::kPropagateToCluster);
  EXPECT_EQ(decision.status, kLost);
  EXPECT_FALSE(policy.IsRecoverable(MakeTask("worker", 1)));
}

TEST(SupervisionPolicyTest, JobScoped_PropagatesToJob) {
  JobScoped policy;
  EXPECT_EQ(policy.OnTaskFailure(MakeTask("ps", 0), kLost, kT0).action,
            FailureAction::kPropagateToJob);
}

TEST(SupervisionPolicyTest, RecoverableJobs_ToleratesNamedJobsOnly) {
  RecoverableJobs policy({"worker"});
  EXPECT_EQ(policy.OnTaskFailure(MakeTask("worker", 3), kLost, kT0).action,
            FailureAction::kTolerate);
  EXPECT_EQ(policy.OnTaskFailure(MakeTask("ps", 0), kLost, kT0).action,
            FailureAction::kPropagateToCluster);
  EXPECT_TRUE(policy.IsRecoverable(MakeTask("worker", 0)));
  EXPECT_FALSE(policy.IsRecoverable(MakeTask("ps", 0)));
}

TEST(SupervisionPolicyTest, RestartIntensity_FailsJobPastBudgetWithinPeriod) {
  RestartIntensity policy(std::make_unique<RecoverableJobs>(std::vector<std::string>{"worker"}), 2,
                          absl::Seconds(10));
  auto task = MakeTask("worker", 0);
  EXPECT_EQ(policy.OnTaskFailure(task, kLost, kT0).action, FailureAction::kTolerate);
  EXPECT_EQ(policy.OnTaskFailure(task, kLost, kT0 + absl::Seconds(1)).action,
            FailureAction::kTolerate);
  auto third = policy.OnTaskFailure(task, kLost, kT0 + absl::Seconds(2));
  EXPECT_EQ(third.action, FailureAction::kFailJob);
  EXPECT_EQ(third.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(third.status.message()), HasSubstr("job worker failed: 3 task failures"));
}

TEST(SupervisionPolicyTest, RestartIntensity_OldFailuresLeaveTheWindow) {
  RestartIntensity policy(std::make_unique<FateSharing>(), 1, absl::Seconds(10));
  auto task = MakeTask("worker", 0);
  EXPECT_EQ(policy.OnTaskFailure(task, kLost, kT0).action, FailureAction::kPropagateToCluster);
  EXPECT_EQ(policy.OnTaskFailure(task, kLost, kT0 + absl::Seconds(10)).action,
            FailureAction::kPropagateToCluster);
  EXPECT_EQ(policy.OnTaskFailure(MakeTask("ps", 0), kLost, kT0 + absl::Seconds(11)).action,
            FailureAction::kPropagateToCluster);
  EXPECT_EQ(policy.OnTaskFailure(task, kLost, kT0 + absl::Seconds(12)).action,
            FailureAction::kFailJob);
}

TEST(SupervisionPolicyTest, RestartIntensity_NamesWhichTasksFailedHowOften) {
  RestartIntensity policy(std::make_unique<OneForOne>(), 2, absl::Seconds(60));
  EXPECT_EQ(policy.OnTaskFailure(MakeTask("worker", 1), kLost, kT0).restart, RestartScope::kTask);
  EXPECT_EQ(policy.OnTaskFailure(MakeTask("worker", 3), kLost, kT0).restart, RestartScope::kTask);
  auto third = policy.OnTaskFailure(MakeTask("worker", 1), kLost, kT0 + absl::Seconds(1));
  EXPECT_EQ(third.action, FailureAction::kFailJob);
  EXPECT_EQ(third.restart, RestartScope::kNone);
  EXPECT_THAT(std::string(third.status.message()),
              HasSubstr("(/job:worker/task:1 2 times, /job:worker/task:3 1 time)"));
}

TEST(SupervisionPolicyTest, OneForOne_RestartsTheTaskAloneAndTellsNobody) {
  OneForOne policy;
  auto decision = policy.OnTaskFailure(MakeTask("worker", 2), kLost, kT0);
  EXPECT_EQ(decision.action, FailureAction::kTolerate);
  EXPECT_EQ(decision.restart, RestartScope::kTask);
  EXPECT_TRUE(policy.IsRecoverable(MakeTask("worker", 0)));
}

TEST(SupervisionPolicyTest, OneForAll_TellsEveryTaskAndRestartsThemAll) {
  OneForAll policy;
  auto decision = policy.OnTaskFailure(MakeTask("worker", 2), kLost, kT0);
  EXPECT_EQ(decision.action, FailureAction::kPropagateToCluster);
  EXPECT_EQ(decision.restart, RestartScope::kAll);
  EXPECT_EQ(decision.status, kLost);
  EXPECT_FALSE(policy.IsRecoverable(MakeTask("worker", 0)));
}

TEST(SupervisionPolicyTest, BuiltInPolicies_RestartNothing) {
  EXPECT_EQ(FateSharing().OnTaskFailure(MakeTask("w", 0), kLost, kT0).restart, RestartScope::kNone);
  EXPECT_EQ(RecoverableJobs({"w"}).OnTaskFailure(MakeTask("w", 0), kLost, kT0).restart,
            RestartScope::kNone);
}

TEST(SupervisionPolicyTest, DefaultPolicy_FollowsRecoverableJobs) {
  EXPECT_EQ(DefaultPolicy({})->Describe(), "fate-sharing");
  EXPECT_EQ(DefaultPolicy({"ps", "a"})->Describe(), "recoverable jobs: a,ps");
}

}  // namespace
}  // namespace muster
