// The coordinator's read-only view of every configured task: the task list fixed at start,
// which tasks are recoverable, and the latest state each task actor reported. Cluster-wide
// requests (barriers, GetTaskState, WatchJobState, GetAliveTasks) read it; only task actors
// change task state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/status/status.h>
#include <absl/strings/string_view.h>

#include "muster/proto/coordination_config.pb.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

// InvalidArgument for a task that is not configured: "<what><task name>. It is not in the
// cluster configuration...".
absl::Status UnknownTaskError(absl::string_view what, const proto::CoordinatedTask& task);

// The report pushed to an agent for `status`, naming `source` unless the status names a task.
proto::ReportErrorToTaskRequest ErrorReport(const absl::Status& status,
                                            const proto::CoordinatedTask& source);

class ClusterView {
 public:
  ClusterView() = default;
  // Builds the task list of `config`: every task of every job, ordered by (job, id); every
  // task starts DISCONNECTED.
  explicit ClusterView(const proto::CoordinationServiceConfig& config);

  // Every configured task, ordered by (job name, task id).
  const std::vector<proto::CoordinatedTask>& tasks() const { return tasks_; }
  // The position of a configured task in tasks(); nullopt for a task not in the configuration.
  // (A job's tasks are contiguous there: no lookup per task, and no name built.)
  std::optional<uint32_t> IndexOf(const proto::CoordinatedTask& task) const;
  bool IsKnown(const proto::CoordinatedTask& task) const { return IndexOf(task).has_value(); }
  // True when `job` has at least one configured task.
  bool HasJob(const std::string& job) const { return jobs_.contains(job); }
  // True when the task's job is recoverable or the task registered as recoverable.
  bool IsRecoverable(const proto::CoordinatedTask& task) const;
  // The latest state of the task at `index` in tasks() (index < tasks().size()).
  const proto::CoordinatedTaskStateInfo& state(uint32_t index) const { return states_[index]; }
  // The latest state of a known task; nullptr for unknown tasks.
  const proto::CoordinatedTaskStateInfo* Find(const proto::CoordinatedTask& task) const;
  // Replaces the state of `info.task()`; returns false (and changes nothing) for unknown tasks.
  bool Update(const proto::CoordinatedTaskStateInfo& info);
  // Marks a configured task recoverable (its agent registered with the recoverable flag);
  // nothing for a task not in the configuration.
  void SetRecoverable(const proto::CoordinatedTask& task, bool recoverable);

 private:
  // The tasks of a job: tasks_[first, first + count), ids 0..count-1.
  struct JobRange {
    uint32_t first = 0;
    uint32_t count = 0;
  };
  std::vector<proto::CoordinatedTask> tasks_;
  absl::flat_hash_map<std::string, JobRange> jobs_;
  std::vector<proto::CoordinatedTaskStateInfo> states_;  // by position in tasks_
  absl::flat_hash_set<std::string> recoverable_jobs_;
  std::vector<bool> recoverable_tasks_;  // by position in tasks_
};

}  // namespace muster
