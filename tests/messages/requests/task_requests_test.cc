#include "muster/messages/requests/task_requests.h"

#include <gtest/gtest.h>

#include "muster/messages/task_name.h"

namespace muster::requests {
namespace {

TEST(TaskRequestsTest, WatchJobStateWithoutVersionAnswersAtOnce) {
  proto::WatchJobStateRequest now = WatchJobState("worker", std::nullopt);
  EXPECT_EQ(now.job_name(), "worker");
  EXPECT_EQ(now.version_number(), -1);
  EXPECT_EQ(WatchJobState("", 7).version_number(), 7);
}

TEST(TaskRequestsTest, NotifyPreemptionEncodesAnUnknownDeadlineAsZero) {
  proto::NotifyPreemptionRequest unknown = NotifyPreemption("maintenance", absl::InfiniteFuture());
  EXPECT_EQ(unknown.reason(), "maintenance");
  EXPECT_EQ(unknown.deadline_unix_ms(), 0);
  EXPECT_EQ(NotifyPreemption("", absl::FromUnixMillis(1234)).deadline_unix_ms(), 1234);
}

TEST(TaskRequestsTest, ReportErrorToServiceCarriesCodeAndMessage) {
  proto::ReportErrorToServiceRequest request =
      ReportErrorToService(absl::InternalError("disk on fire"));
  EXPECT_EQ(request.error_code(), static_cast<int32_t>(absl::StatusCode::kInternal));
  EXPECT_EQ(request.error_message(), "disk on fire");
  EXPECT_FALSE(request.has_error_origin());
}

TEST(TaskRequestsTest, TaskListsKeepTheirOrder) {
  std::vector<proto::CoordinatedTask> tasks = {MakeTask("worker", 2), MakeTask("ps", 0)};
  proto::GetTaskStateRequest state = GetTaskState(tasks);
  ASSERT_EQ(state.source_task_size(), 2);
  EXPECT_EQ(state.source_task(1).job_name(), "ps");
  proto::GetAliveTasksRequest alive = GetAliveTasks(tasks);
  ASSERT_EQ(alive.tasks_size(), 2);
  EXPECT_EQ(alive.tasks(0).task_id(), 2);
  EXPECT_EQ(ResetTask(tasks[1]).source_task().job_name(), "ps");
}

TEST(TaskRequestsTest, WaitForAllTasksCarriesTheLocalDevices) {
  proto::CoordinationServiceDeviceInfo devices;
  devices.mutable_xla()->mutable_devices()->add_nodes()->set_node_id(3);
  proto::WaitForAllTasksRequest request = WaitForAllTasks(devices);
  EXPECT_EQ(request.local_device_info().SerializeAsString(), devices.SerializeAsString());
}

}  // namespace
}  // namespace muster::requests
