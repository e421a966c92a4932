// Cluster-wide requests: WaitForAllTasks device exchange, GetTaskState, WatchJobState,
// GetAliveTasks, and the built-in supervision policies, on simulated time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/actors/leader_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using ::testing::HasSubstr;
using Code = absl::StatusCode;

proto::WaitForAllTasksRequest TfDevices(const std::string& job, int id, int count) {
  proto::WaitForAllTasksRequest request;
  *request.mutable_source_task() = MakeTask(job, id);
  auto* tf = request.mutable_local_device_info()->mutable_tf();
  for (int d = 0; d < count; ++d) {
    tf->add_devices()->set_name(TaskName(MakeTask(job, id)) + "/device:GPU:" + std::to_string(d));
  }
  return request;
}

proto::WaitForAllTasksRequest XlaDevices(const std::string& job, int id, int count) {
  proto::WaitForAllTasksRequest request;
  *request.mutable_source_task() = MakeTask(job, id);
  auto* node = request.mutable_local_device_info()->mutable_xla()->mutable_devices()->add_nodes();
  node->set_node_id(id);
  for (int d = 0; d < count; ++d) node->add_devices()->set_local_device_ordinal(d);
  return request;
}

class ClusterTest : public LeaderTest {
 protected:
  void RegisterAll(int workers) {
    for (int id = 0; id < workers; ++id)
      ASSERT_TRUE(Register("worker", id, 10 + id, Agent(&r_)).ok());
    ASSERT_TRUE(Register("ps", 0, 9, Agent(&r_)).ok());
  }
  Reports r_;
};

TEST_F(ClusterTest, WaitForAllTasks_TfListsConcatenatedInJobTaskOrder) {
  Spawn(Config(2));
  RegisterAll(2);
  auto w1 = Send<proto::WaitForAllTasksResponse>(leader_, TfDevices("worker", 1, 1));
  auto ps = Send<proto::WaitForAllTasksResponse>(leader_, TfDevices("ps", 0, 1));
  EXPECT_FALSE(w1->has_value());
  auto w0 = Call<proto::WaitForAllTasksResponse>(leader_, TfDevices("worker", 0, 2));
  ASSERT_TRUE(w0.ok()) << w0.status();
  ASSERT_TRUE(w1->has_value() && ps->has_value());
  const auto& devices = w0->cluster_device_info().tf().devices();
  ASSERT_EQ(devices.size(), 4);
  EXPECT_EQ(devices[0].name(), "/job:ps/task:0/device:GPU:0");
  EXPECT_EQ(devices[1].name(), "/job:worker/task:0/device:GPU:0");
  EXPECT_EQ(devices[3].name(), "/job:worker/task:1/device:GPU:0");
  EXPECT_EQ((*w1)->value().SerializeAsString(), w0->SerializeAsString());
  EXPECT_EQ(w0->leader_incarnation(), 77u);
}

TEST_F(ClusterTest, WaitForAllTasks_XlaGlobalIdsDenseInProcessThenDeviceOrder) {
  Spawn(Config(2));
  RegisterAll(2);
  Send<proto::WaitForAllTasksResponse>(leader_, XlaDevices("worker", 1, 2));
  Send<proto::WaitForAllTasksResponse>(leader_, XlaDevices("worker", 0, 3));
  auto reply = Call<proto::WaitForAllTasksResponse>(leader_, XlaDevices("ps", 0, 1));
  ASSERT_TRUE(reply.ok()) << reply.status();
  const auto& nodes = reply->cluster_device_info().xla().devices().nodes();
  ASSERT_EQ(nodes.size(), 3);
  // Order: ps/0 (1 device), worker/0 (3), worker/1 (2).
  EXPECT_EQ(nodes[0].devices(0).global_device_id(), 0);
  EXPECT_EQ(nodes[1].node_id(), 0);
  EXPECT_EQ(nodes[1].devices(2).global_device_id(), 3);
  EXPECT_EQ(nodes[2].node_id(), 1);
  EXPECT_EQ(nodes[2].devices(1).global_device_id(), 5);
}

TEST_F(ClusterTest, WaitForAllTasks_TaskFailsWhileWaiting_InternalNamingIt) {
  Spawn(Config(1));
  RegisterAll(1);
  auto waiting = Send<proto::WaitForAllTasksResponse>(leader_, TfDevices("worker", 0, 1));
  AdvanceTime(10s);  // nobody heartbeats: both tasks go stale
  ASSERT_TRUE(waiting->has_value());
  EXPECT_THAT(**waiting, StatusIs(Code::kInternal, HasSubstr("failed before every task arrived")));
  const absl::Status& status = (*waiting)->status();
  std::optional<proto::CoordinatedTask> failed = FailedTaskOf(status);
  ASSERT_TRUE(failed.has_value()) << status;
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat(TaskName(*failed), " failed before")));
}

TEST_F(ClusterTest, WaitForAllTasks_NotConnected_FailedPrecondition) {
  Spawn(Config(1));
  EXPECT_THAT(Call<proto::WaitForAllTasksResponse>(leader_, TfDevices("worker", 0, 1)),
              StatusIs(Code::kFailedPrecondition, HasSubstr("/job:worker/task:0")));
}

TEST_F(ClusterTest, GetTaskState_UnknownTask_InvalidArgument) {
  Spawn(Config(1));
  proto::GetTaskStateRequest request;
  *request.add_source_task() = MakeTask("worker", 3);
  EXPECT_THAT(Call<proto::GetTaskStateResponse>(leader_, request),
              StatusIs(Code::kInvalidArgument, HasSubstr("/job:worker/task:3")));
}

TEST_F(ClusterTest, WatchJobState_VersionsAndLongPoll) {
  Spawn(Config(2));
  proto::WatchJobStateRequest now;
  now.set_job_name("worker");
  now.set_version_number(-1);
  auto first = Call<proto::WatchJobStateResponse>(leader_, now);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->task_state_size(), 2);
  proto::WatchJobStateRequest next = now;
  next.set_version_number(first->version_number());
  auto parked = Send<proto::WatchJobStateResponse>(leader_, next);
  EXPECT_FALSE(parked->has_value());
  ASSERT_TRUE(Register("worker", 1, 5, Agent(&r_)).ok());
  ASSERT_TRUE(parked->has_value());
  auto changed = **parked;
  ASSERT_TRUE(changed.ok());
  EXPECT_GT(changed->version_number(), first->version_number());
  EXPECT_EQ(changed->task_state(1).state(), proto::TASKSTATE_CONNECTED);
  proto::WatchJobStateRequest ahead = now;
  ahead.set_version_number(changed->version_number() + 5);
  EXPECT_THAT(Call<proto::WatchJobStateResponse>(leader_, ahead),
              StatusIs(Code::kInvalidArgument, HasSubstr("ahead of the service")));
}

TEST_F(ClusterTest, WatchJobState_UnknownJob_InvalidArgumentNamingIt) {
  Spawn(Config(2));
  proto::WatchJobStateRequest request;
  request.set_job_name("trainer");
  request.set_version_number(-1);
  EXPECT_THAT(Call<proto::WatchJobStateResponse>(leader_, request),
              StatusIs(Code::kInvalidArgument, HasSubstr("'trainer'")));
  request.set_job_name("");
  auto all = Call<proto::WatchJobStateResponse>(leader_, request);
  ASSERT_THAT(all, IsOk());
  EXPECT_EQ(all->task_state_size(), 3);
}

TEST_F(ClusterTest, WaitForAllTasks_SecondCallWithOtherDevices_InternalDifferentTopology) {
  Spawn(Config(1));
  RegisterAll(1);
  Send<proto::WaitForAllTasksResponse>(leader_, XlaDevices("worker", 0, 2));
  EXPECT_THAT(Call<proto::WaitForAllTasksResponse>(leader_, XlaDevices("worker", 0, 3)),
              StatusIs(Code::kInternal, HasSubstr("Different local topology for "
                                                  "/job:worker/task:0")));
  ASSERT_THAT(Call<proto::WaitForAllTasksResponse>(leader_, XlaDevices("ps", 0, 1)), IsOk());
  EXPECT_THAT(Call<proto::WaitForAllTasksResponse>(leader_, XlaDevices("ps", 0, 4)),
              StatusIs(Code::kInternal, HasSubstr("Different local topology for /job:ps/task:0")));
  auto same = Call<proto::WaitForAllTasksResponse>(leader_, XlaDevices("worker", 0, 2));
  ASSERT_THAT(same, IsOk());
  EXPECT_EQ(same->cluster_device_info().xla().devices().nodes_size(), 2);
}

proto::GetAliveTasksRequest Alive(int requester, int workers) {
  proto::GetAliveTasksRequest request;
  *request.mutable_requesting_task() = MakeTask("worker", requester);
  for (int id = 0; id < workers; ++id) *request.add_tasks() = MakeTask("worker", id);
  return request;
}

TEST_F(ClusterTest, GetAliveTasks_AllCallersGetTheSameSet) {
  Spawn(Config(3));
  RegisterAll(3);
  auto a = Send<proto::GetAliveTasksResponse>(leader_, Alive(0, 3));
  auto b = Send<proto::GetAliveTasksResponse>(leader_, Alive(2, 3));
  EXPECT_FALSE(a->has_value());
  auto c = Call<proto::GetAliveTasksResponse>(leader_, Alive(1, 3));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->alive_tasks_size(), 3);
  EXPECT_EQ(c->incarnations(2), 12u);
  EXPECT_EQ((*a)->value().SerializeAsString(), c->SerializeAsString());
  EXPECT_EQ((*b)->value().SerializeAsString(), c->SerializeAsString());
}

TEST_F(ClusterTest, GetAliveTasks_TaskDiesWhileOthersWait_AnsweredWithoutIt) {
  Spawn(Config(3), std::make_shared<RecoverableJobs>(std::vector<std::string>{"worker"}));
  RegisterAll(3);
  auto a = Send<proto::GetAliveTasksResponse>(leader_, Alive(0, 3));
  auto b = Send<proto::GetAliveTasksResponse>(leader_, Alive(1, 3));
  AdvanceTime(5s);
  ASSERT_THAT(Heartbeat("worker", 0, 10), IsOk());
  ASSERT_THAT(Heartbeat("worker", 1, 11), IsOk());
  AdvanceTime(5s);  // worker/2 goes stale
  ASSERT_TRUE(a->has_value() && b->has_value());
  ASSERT_TRUE((*a)->ok());
  ASSERT_EQ((*a)->value().alive_tasks_size(), 2);
  EXPECT_EQ((*a)->value().alive_tasks(1).task_id(), 1);
}

TEST_F(ClusterTest, GetAliveTasks_RequesterNotInSet_InvalidArgument) {
  Spawn(Config(3));
  EXPECT_THAT(Call<proto::GetAliveTasksResponse>(leader_, Alive(2, 2)),
              StatusIs(Code::kInvalidArgument, HasSubstr("Requesting task /job:worker/task:2")));
}

TEST_F(ClusterTest, JobScopedPolicy_PropagatesToTheJobOnly) {
  Spawn(Config(2), std::make_shared<JobScoped>());
  Reports w0, w1, ps;
  ASSERT_TRUE(Register("worker", 0, 1, Agent(&w0)).ok());
  ASSERT_TRUE(Register("worker", 1, 2, Agent(&w1)).ok());
  ASSERT_TRUE(Register("ps", 0, 3, Agent(&ps)).ok());
  ASSERT_FALSE(Register("worker", 0, 9, Agent(&w0)).ok());  // restarted: fails worker/0
  EXPECT_EQ(w1->size(), 1u);
  EXPECT_TRUE(ps->empty());
}

TEST_F(ClusterTest, RecoverableJob_FailureToleratedAndTaskRejoinsWithNewIncarnation) {
  auto config = Config(2);
  config.add_recoverable_jobs("worker");
  Spawn(config);
  Reports w0, w1;
  ASSERT_TRUE(Register("worker", 0, 1, Agent(&w0)).ok());
  ASSERT_TRUE(Register("worker", 1, 2, Agent(&w1)).ok());
  AdvanceTime(5s);
  ASSERT_THAT(Heartbeat("worker", 1, 2), IsOk());
  AdvanceTime(5s);  // worker/0 goes stale: tolerated
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
  EXPECT_TRUE(w1->empty());
  EXPECT_THAT(Register("worker", 0, 7, Agent(&w0)), IsOk());
  EXPECT_EQ(State("worker", 0).incarnation(), 7u);
}

// A task that registers as recoverable itself (the reference's CoordinatedTask.recoverable bit)
// fails alone under the default policy too, and rejoins as a new incarnation.
TEST_F(ClusterTest, TaskRegisteredAsRecoverable_FailureNotPropagatedAndRejoins) {
  Spawn(Config(2));
  Reports w0, w1;
  proto::RegisterTaskRequest recoverable;
  *recoverable.mutable_source_task() = MakeTask("worker", 0);
  recoverable.mutable_source_task()->set_recoverable(true);
  recoverable.set_incarnation(1);
  ASSERT_THAT(Call<proto::RegisterTaskResponse>(leader_, recoverable, Agent(&w0)).status(), IsOk());
  ASSERT_TRUE(Register("worker", 1, 2, Agent(&w1)).ok());
  AdvanceTime(5s);
  ASSERT_THAT(Heartbeat("worker", 1, 2), IsOk());
  AdvanceTime(5s);  // worker/0 goes stale: it alone
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
  EXPECT_TRUE(w1->empty());
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_CONNECTED);
  recoverable.set_incarnation(7);
  EXPECT_THAT(Call<proto::RegisterTaskResponse>(leader_, recoverable, Agent(&w0)).status(), IsOk());
  EXPECT_EQ(State("worker", 0).incarnation(), 7u);
}

// Every connected agent was told of the first failure; a recoverable task's new agent (not
// handed the old error when it connects) is counted again and told of the next failure.
TEST_F(ClusterTest, AgentRejoinedAfterAFailure_ToldOfTheNextFailureOthersNotAgain) {
  auto config = Config(2);
  config.add_recoverable_jobs("worker");
  Spawn(config);
  Reports w0, w1, ps, w0_again, ps_again;
  ASSERT_TRUE(Register("worker", 0, 1, Agent(&w0)).ok());
  ASSERT_TRUE(Register("worker", 1, 2, Agent(&w1)).ok());
  ASSERT_TRUE(Register("ps", 0, 3, Agent(&ps)).ok());
  auto fail_ps = [&](Code code) {
    proto::ReportErrorToServiceRequest report;
    report.set_error_code(static_cast<int>(code));
    report.set_error_message("oom");
    *report.mutable_error_origin() = MakeTask("ps", 0);
    ASSERT_THAT(Call<proto::ReportErrorToServiceResponse>(leader_, report), IsOk());
  };
  fail_ps(Code::kDataLoss);
  ASSERT_EQ(w0->size(), 1u);
  ASSERT_EQ(w1->size(), 1u);
  ASSERT_TRUE((TaskCall<proto::ResetTaskResponse, proto::ResetTaskRequest>("worker", 0)).ok());
  ASSERT_TRUE(Register("worker", 0, 7, Agent(&w0_again)).ok());
  EXPECT_TRUE(w0_again->empty());
  ASSERT_TRUE((TaskCall<proto::ResetTaskResponse, proto::ResetTaskRequest>("ps", 0)).ok());
  ASSERT_TRUE(Register("ps", 0, 8, Agent(&ps_again)).ok());
  fail_ps(Code::kInternal);
  ASSERT_EQ(w0_again->size(), 1u);
  EXPECT_EQ((*w0_again)[0].error_code(), static_cast<int>(Code::kInternal));
  EXPECT_EQ(w1->size(), 1u);  // in ERROR since the first: not told again
}

TEST_F(ClusterTest, RestartIntensity_ThirdFailureFailsTheWholeJob) {
  Spawn(Config(3), std::make_shared<RestartIntensity>(
                       std::make_unique<RecoverableJobs>(std::vector<std::string>{"worker"}), 2,
                       absl::Minutes(1)));
  RegisterAll(3);
  auto fail = [&](int id) {
    proto::ReportErrorToServiceRequest report;
    report.set_error_code(static_cast<int>(Code::kUnavailable));
    report.set_error_message("oom");
    *report.mutable_error_origin() = MakeTask("worker", id);
    ASSERT_THAT(Call<proto::ReportErrorToServiceResponse>(leader_, report), IsOk());
  };
  fail(0);
  fail(1);
  EXPECT_EQ(State("worker", 2).state(), proto::TASKSTATE_CONNECTED);
  ASSERT_TRUE((TaskCall<proto::ResetTaskResponse, proto::ResetTaskRequest>("worker", 0)).ok());
  ASSERT_TRUE(Register("worker", 0, 60, Agent(&r_)).ok());
  fail(0);  // the third failure within a minute
  auto state = State("worker", 2);
  EXPECT_EQ(state.state(), proto::TASKSTATE_ERROR);
  EXPECT_THAT(state.error_message(), HasSubstr("exceed the restart intensity of 2"));
  EXPECT_EQ(State("ps", 0).state(), proto::TASKSTATE_CONNECTED);
}

}  // namespace
}  // namespace muster::testing
