#include "muster/actors/cluster/device_exchange.h"

#include <absl/strings/str_cat.h>
#include <google/protobuf/util/message_differencer.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

using google::protobuf::util::MessageDifferencer;

// A device list in one line, cut to a readable length.
std::string Abbreviate(const proto::CoordinationServiceDeviceInfo& devices) {
  constexpr size_t kMax = 512;
  std::string text = devices.ShortDebugString();
  if (text.size() > kMax)
    text = absl::StrCat(text.substr(0, kMax), "... (", text.size(), " bytes)");
  return text;
}

proto::CoordinationServiceDeviceInfo MergeXla(
    const std::vector<proto::CoordinationServiceDeviceInfo>& devices) {
  proto::CoordinationServiceDeviceInfo out;
  auto* global = out.mutable_xla()->mutable_devices();
  int next_id = 0;
  for (const auto& info : devices) {
    for (const auto& node : info.xla().devices().nodes()) {
      auto* merged = global->add_nodes();
      *merged = node;
      for (auto& device : *merged->mutable_devices()) device.set_global_device_id(next_id++);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<proto::CoordinationServiceDeviceInfo> DefaultDeviceAggregation(
    const std::vector<proto::CoordinatedTask>& tasks,
    const std::vector<proto::CoordinationServiceDeviceInfo>& devices) {
  bool tf = false;
  bool xla = false;
  for (size_t i = 0; i < devices.size(); ++i) {
    tf |= devices[i].has_tf();
    xla |= devices[i].has_xla();
    if (tf && xla) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tasks sent different kinds of device info (TensorFlow and XLA); ", TaskName(tasks[i]),
          " is one of them. Every task of a job must use the same runtime."));
    }
  }
  if (xla) return MergeXla(devices);
  proto::CoordinationServiceDeviceInfo out;
  auto* list = out.mutable_tf();
  for (const auto& info : devices) {
    for (const auto& device : info.tf().devices()) *list->add_devices() = device;
  }
  return out;
}

DeviceExchange::DeviceExchange(DeviceAggregator aggregator, uint64_t leader_incarnation)
    : aggregator_(aggregator ? std::move(aggregator) : DefaultDeviceAggregation),
      leader_incarnation_(leader_incarnation) {}

void DeviceExchange::Join(const ClusterView& view, const proto::WaitForAllTasksRequest& request,
                          Promise promise) {
  auto [known, added] =
      devices_.try_emplace(TaskName(request.source_task()), request.local_device_info());
  if (!added && !MessageDifferencer::Equals(known->second, request.local_device_info())) {
    promise.deliver(ToError(MakeCoordinationError(
        absl::InternalError(absl::StrCat(
            "Different local topology for ", TaskName(request.source_task()),
            " has been set previously, possibly before a restart.\nBefore: ",
            Abbreviate(known->second), "\nAfter: ", Abbreviate(request.local_device_info()),
            "\nA task must report the same devices every time; restart the whole job if its "
            "devices changed.")),
        request.source_task())));
    return;
  }
  if (result_) {
    if (result_->ok()) {
      promise.deliver(**result_);
    } else {
      promise.deliver(ToError(result_->status()));
    }
    return;
  }
  waiting_.push_back(std::move(promise));
  if (devices_.size() < view.tasks().size()) return;
  std::vector<proto::CoordinationServiceDeviceInfo> ordered;
  for (const auto& task : view.tasks()) ordered.push_back(devices_.at(TaskName(task)));
  auto aggregated = aggregator_(view.tasks(), ordered);
  if (!aggregated.ok()) return Finish(MakeCoordinationError(aggregated.status()));
  proto::WaitForAllTasksResponse response;
  response.set_leader_incarnation(leader_incarnation_);
  *response.mutable_cluster_device_info() = *std::move(aggregated);
  Finish(std::move(response));
}

void DeviceExchange::OnTaskState(const proto::CoordinatedTaskStateInfo& info) {
  if (result_ || waiting_.empty() || info.state() != proto::TASKSTATE_ERROR) return;
  Finish(WithFailedTask(
      MakeCoordinationError(absl::InternalError(absl::StrCat(
                                "WaitForAllTasks failed because ", TaskName(info.task()),
                                " failed before every task arrived: ", info.error_message())),
                            info.task()),
      info.task()));
}

void DeviceExchange::Abort(const absl::Status& status) {
  for (auto& promise : waiting_) promise.deliver(ToError(status));
  waiting_.clear();
}

void DeviceExchange::Finish(absl::StatusOr<proto::WaitForAllTasksResponse> result) {
  result_ = std::move(result);
  for (auto& promise : waiting_) {
    if (result_->ok()) {
      promise.deliver(**result_);
    } else {
      promise.deliver(ToError(result_->status()));
    }
  }
  waiting_.clear();
}

}  // namespace muster
