#include "muster/actors/cluster/cluster_view.h"

#include <algorithm>

#include <absl/strings/str_cat.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {

absl::Status UnknownTaskError(absl::string_view what, const proto::CoordinatedTask& task) {
  return MakeCoordinationError(absl::InvalidArgumentError(
      absl::StrCat(what, TaskNameForMessage(task),
                   ". It is not in the cluster configuration: check the "
                   "job name and task id (this usually implies a configuration error).")));
}

proto::ReportErrorToTaskRequest ErrorReport(const absl::Status& status,
                                            const proto::CoordinatedTask& source) {
  proto::ReportErrorToTaskRequest report;
  SetStatusFields(status, &report);
  if (!report.error_payload().has_source_task()) {
    *report.mutable_error_payload()->mutable_source_task() = source;
  }
  return report;
}

ClusterView::ClusterView(const proto::CoordinationServiceConfig& config) {
  for (const auto& job : config.coordinated_job_list()) {
    for (int id = 0; id < job.num_tasks(); ++id) tasks_.push_back(MakeTask(job.name(), id));
  }
  std::sort(tasks_.begin(), tasks_.end(), TaskLess);
  // A job given twice has the tasks of its larger count, once each.
  tasks_.erase(std::unique(tasks_.begin(), tasks_.end(), SameTask), tasks_.end());
  tasks_.shrink_to_fit();
  states_.reserve(tasks_.size());
  recoverable_tasks_.assign(tasks_.size(), false);
  for (uint32_t i = 0; i < tasks_.size(); ++i) {
    JobRange& range = jobs_[tasks_[i].job_name()];
    if (range.count == 0) range.first = i;
    ++range.count;
    proto::CoordinatedTaskStateInfo info;
    *info.mutable_task() = tasks_[i];
    info.set_state(proto::TASKSTATE_DISCONNECTED);
    info.set_last_heartbeat_age_ms(-1);
    states_.push_back(std::move(info));
  }
  recoverable_jobs_.insert(config.recoverable_jobs().begin(), config.recoverable_jobs().end());
}

std::optional<uint32_t> ClusterView::IndexOf(const proto::CoordinatedTask& task) const {
  auto it = jobs_.find(task.job_name());
  if (it == jobs_.end() || task.task_id() < 0 ||
      static_cast<uint32_t>(task.task_id()) >= it->second.count) {
    return std::nullopt;
  }
  return it->second.first + static_cast<uint32_t>(task.task_id());
}

bool ClusterView::IsRecoverable(const proto::CoordinatedTask& task) const {
  if (recoverable_jobs_.contains(task.job_name())) return true;
  std::optional<uint32_t> index = IndexOf(task);
  return index && recoverable_tasks_[*index];
}

const proto::CoordinatedTaskStateInfo* ClusterView::Find(const proto::CoordinatedTask& task) const {
  std::optional<uint32_t> index = IndexOf(task);
  return index ? &states_[*index] : nullptr;
}

bool ClusterView::Update(const proto::CoordinatedTaskStateInfo& info) {
  std::optional<uint32_t> index = IndexOf(info.task());
  if (!index) return false;
  states_[*index] = info;
  return true;
}

void ClusterView::SetRecoverable(const proto::CoordinatedTask& task, bool recoverable) {
  if (std::optional<uint32_t> index = IndexOf(task)) recoverable_tasks_[*index] = recoverable;
}

}  // namespace muster
