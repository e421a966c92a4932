#include "muster/messages/requests/task_requests.h"

#include "muster/messages/requests/wire_timeouts.h"

namespace muster::requests {

proto::WaitForAllTasksRequest WaitForAllTasks(
    const proto::CoordinationServiceDeviceInfo& local_devices) {
  proto::WaitForAllTasksRequest request;
  *request.mutable_local_device_info() = local_devices;
  return request;
}

proto::GetTaskStateRequest GetTaskState(const std::vector<proto::CoordinatedTask>& tasks) {
  proto::GetTaskStateRequest request;
  for (const auto& task : tasks) *request.add_source_task() = task;
  return request;
}

proto::ReportErrorToServiceRequest ReportErrorToService(int32_t code, const std::string& message) {
  proto::ReportErrorToServiceRequest request;
  request.set_error_code(code);
  request.set_error_message(message);
  return request;
}

proto::ReportErrorToServiceRequest ReportErrorToService(const absl::Status& error) {
  return ReportErrorToService(static_cast<int32_t>(error.code()), std::string(error.message()));
}

proto::ResetTaskRequest ResetTask(const proto::CoordinatedTask& task) {
  proto::ResetTaskRequest request;
  *request.mutable_source_task() = task;
  return request;
}

proto::GetAliveTasksRequest GetAliveTasks(const std::vector<proto::CoordinatedTask>& tasks) {
  proto::GetAliveTasksRequest request;
  for (const auto& task : tasks) *request.add_tasks() = task;
  return request;
}

proto::WatchJobStateRequest WatchJobState(const std::string& job, std::optional<int64_t> version) {
  proto::WatchJobStateRequest request;
  request.set_job_name(job);
  request.set_version_number(version.value_or(-1));  // -1: answer at once
  return request;
}

proto::NotifyPreemptionRequest NotifyPreemption(const std::string& reason, absl::Time deadline) {
  proto::NotifyPreemptionRequest request;
  request.set_deadline_unix_ms(DeadlineUnixMs(deadline));
  request.set_reason(reason);
  return request;
}

proto::WaitForMembershipRequest WaitForMembership(int64_t known_version, absl::Duration timeout) {
  proto::WaitForMembershipRequest request;
  request.set_known_version(known_version);
  request.set_timeout_in_ms(MembershipTimeoutMs(timeout));
  return request;
}

proto::GetMembershipRequest GetMembership(const std::string& job) {
  proto::GetMembershipRequest request;
  request.set_job_name(job);
  return request;
}

}  // namespace muster::requests
