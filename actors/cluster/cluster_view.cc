#include "muster/actors/cluster/cluster_view.h"

#include <algorithm>

#include <absl/strings/str_cat.h>

#include "muster/messages/status_codec.h"
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
    if (job.num_tasks() > 0) jobs_.insert(job.name());
    for (int id = 0; id < job.num_tasks(); ++id) tasks_.push_back(MakeTask(job.name(), id));
  }
  std::sort(tasks_.begin(), tasks_.end(), TaskLess);
  for (const auto& task : tasks_) {
    proto::CoordinatedTaskStateInfo info;
    *info.mutable_task() = task;
    info.set_state(proto::TASKSTATE_DISCONNECTED);
    info.set_last_heartbeat_age_ms(-1);
    states_.emplace(TaskName(task), std::move(info));
  }
  recoverable_jobs_.insert(config.recoverable_jobs().begin(), config.recoverable_jobs().end());
}

bool ClusterView::IsKnown(const proto::CoordinatedTask& task) const {
  return states_.contains(TaskName(task));
}

bool ClusterView::IsRecoverable(const proto::CoordinatedTask& task) const {
  return recoverable_jobs_.contains(task.job_name()) || recoverable_tasks_.contains(TaskName(task));
}

const proto::CoordinatedTaskStateInfo* ClusterView::Find(const proto::CoordinatedTask& task) const {
  auto it = states_.find(TaskName(task));
  return it == states_.end() ? nullptr : &it->second;
}

bool ClusterView::Update(const proto::CoordinatedTaskStateInfo& info) {
  auto it = states_.find(TaskName(info.task()));
  if (it == states_.end()) return false;
  it->second = info;
  return true;
}

void ClusterView::SetRecoverable(const proto::CoordinatedTask& task, bool recoverable) {
  if (recoverable) {
    recoverable_tasks_.insert(TaskName(task));
  } else {
    recoverable_tasks_.erase(TaskName(task));
  }
}

}  // namespace muster
