// The coordinator's reads of every task's state: GetTaskState (a CoordinatedTaskStateInfo per
// task asked for), GetTaskColumns (every task as packed columns, for the leader's metrics and
// live page: one pass over the task slots, no message per task), WatchJobState and
// GetAliveTasks.
#include <limits>
#include <optional>
#include <string>

#include <absl/strings/str_cat.h>

#include "muster/actors/coordinator/coordinator_state.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

// The error messages a TaskColumns carries: after a mass failure, 100,000 of them would be
// most of its bytes, and nobody reads past the first few.
constexpr int kMaxColumnErrors = 1000;

// Milliseconds from `since` to `now`; -1 when it never happened.
int64_t AgeMs(caf::actor_clock::time_point now,
              const std::optional<caf::actor_clock::time_point>& since) {
  if (!since) return -1;
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - *since).count();
}

}  // namespace

caf::result<proto::GetTaskStateResponse> GetTaskState(CoordinatorPointer self,
                                                      const proto::GetTaskStateRequest& request) {
  auto& st = self->state;
  proto::GetTaskStateResponse response;
  auto now = self->clock().now();
  for (const auto& task : request.source_task()) {
    const auto* info = st.tasks.view().Find(task);
    if (info == nullptr) return ToError(UnknownTaskError("GetTaskState for unknown task ", task));
    auto* out = response.add_task_state();
    *out = *info;
    const TaskSlot& slot = st.tasks.SlotOf(task);
    out->set_last_heartbeat_age_ms(AgeMs(now, slot.last_heartbeat));
    out->set_connected_age_ms(AgeMs(now, slot.connected_at));
    if (auto step = st.health.progress.Step(slot.index)) out->set_step(*step);
    out->set_step_age_ms(AgeMs(now, st.health.progress.StepChangedAt(slot.index)));
  }
  return response;
}

proto::TaskColumns TaskColumnsOf(CoordinatorPointer self) {
  const auto& st = self->state;
  const auto& tasks = st.tasks.view().tasks();
  const auto now = self->clock().now();
  proto::TaskColumns columns;
  const int n = static_cast<int>(tasks.size());
  std::string states(n, '\0');
  columns.mutable_incarnations()->Reserve(n);
  columns.mutable_heartbeat_age_ms()->Reserve(n);
  columns.mutable_connected_age_ms()->Reserve(n);
  columns.mutable_steps()->Reserve(n);
  for (int i = 0; i < n; ++i) {
    if (i == 0 || tasks[i].job_name() != tasks[i - 1].job_name()) {
      columns.add_job_names(tasks[i].job_name());
      columns.add_job_sizes(0);
    }
    columns.set_job_sizes(columns.job_sizes_size() - 1, columns.job_sizes().rbegin()[0] + 1);
    const proto::CoordinatedTaskStateInfo& info = st.tasks.view().state(i);
    const TaskSlot& slot = st.tasks[i];
    states[i] = static_cast<char>(info.state());
    columns.add_incarnations(info.incarnation());
    columns.add_heartbeat_age_ms(AgeMs(now, slot.last_heartbeat));
    columns.add_connected_age_ms(AgeMs(now, slot.connected_at));
    columns.add_steps(st.health.progress.Step(i).value_or(std::numeric_limits<int64_t>::min()));
    if (info.state() == proto::TASKSTATE_ERROR && columns.errors_size() < kMaxColumnErrors) {
      proto::TaskColumnError* error = columns.add_errors();
      error->set_index(i);
      error->set_code(info.error_code());
      error->set_message(info.error_message());
    }
  }
  columns.set_states(std::move(states));
  columns.set_version(st.tasks.version());
  return columns;
}

caf::result<proto::WatchJobStateResponse> WatchJobState(
    CoordinatorPointer self, const proto::WatchJobStateRequest& request) {
  auto& st = self->state;
  int64_t version = request.version_number();
  if (!request.job_name().empty() && !st.tasks.view().HasJob(request.job_name())) {
    return ToError(MakeCoordinationError(absl::InvalidArgumentError(absl::StrCat(
        "WatchJobState for unknown job '", JobNameForMessage(request.job_name()),
        "': it is not in the cluster configuration. Watch a configured job, or \"\" for all."))));
  }
  const int64_t current = st.tasks.version();
  if (version > current) {
    return ToError(MakeCoordinationError(absl::InvalidArgumentError(absl::StrCat(
        "WatchJobState version ", version, " is ahead of the service (current version ", current,
        "); the leader has probably restarted: call again with -1."))));
  }
  if (version < current) return JobState(self, request.job_name());
  auto promise = self->make_response_promise<proto::WatchJobStateResponse>();
  st.watches.push_back({request.job_name(), promise});
  return promise;
}

caf::result<proto::GetAliveTasksResponse> GetAliveTasks(
    CoordinatorPointer self, const proto::GetAliveTasksRequest& request) {
  auto& st = self->state;
  if (absl::Status own = ActsAsItself(self, request.requesting_task()); !own.ok()) {
    return ToError(own);
  }
  bool listed = false;
  for (const auto& task : request.tasks()) {
    if (!st.tasks.view().IsKnown(task))
      return ToError(UnknownTaskError("GetAliveTasks for unknown task ", task));
    listed |= SameTask(task, request.requesting_task());
  }
  if (!listed) {
    return ToError(MakeCoordinationError(absl::InvalidArgumentError(
        absl::StrCat("Requesting task ", TaskName(request.requesting_task()),
                     " is not one of the tasks specified in a GetAliveTasks request."))));
  }
  auto promise = self->make_response_promise<proto::GetAliveTasksResponse>();
  st.alive.Join(st.tasks.view(), {request.tasks().begin(), request.tasks().end()},
                request.requesting_task(), promise);
  return promise;
}

}  // namespace muster
