// One builder per task and job verb (see kv_requests.h): what the C++ Agent, the Python
// binding, the muster command and the benchmarks send. A deadline of absl::InfiniteFuture() is
// "no deadline" (wire_timeouts.h encodes it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/time/time.h>

#include "muster/proto/coordination_service.pb.h"

namespace muster::requests {

proto::WaitForAllTasksRequest WaitForAllTasks(
    const proto::CoordinationServiceDeviceInfo& local_devices);
proto::GetTaskStateRequest GetTaskState(const std::vector<proto::CoordinatedTask>& tasks);
proto::ReportErrorToServiceRequest ReportErrorToService(int32_t code, const std::string& message);
proto::ReportErrorToServiceRequest ReportErrorToService(const absl::Status& error);
proto::ResetTaskRequest ResetTask(const proto::CoordinatedTask& task);
proto::GetAliveTasksRequest GetAliveTasks(const std::vector<proto::CoordinatedTask>& tasks);
// Answers once the job's version passes `version`; nullopt answers at once.
proto::WatchJobStateRequest WatchJobState(const std::string& job, std::optional<int64_t> version);
// `deadline`: when the preemption happens (absl::InfiniteFuture(): unknown).
proto::NotifyPreemptionRequest NotifyPreemption(const std::string& reason, absl::Time deadline);
// An elastic job's safe point (absl::InfiniteDuration(): no deadline).
proto::WaitForMembershipRequest WaitForMembership(int64_t known_version, absl::Duration timeout);
proto::GetMembershipRequest GetMembership(const std::string& job);

}  // namespace muster::requests
