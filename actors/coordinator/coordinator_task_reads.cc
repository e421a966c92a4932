// The coordinator's reads of every task's state: GetTaskState (a CoordinatedTaskStateInfo per
// task asked for) and GetTaskColumns (every task as packed columns, for the leader's metrics and
// live page: one pass over the task slots, no message per task).
#include <limits>
#include <optional>
#include <string>

#include "muster/actors/coordinator/coordinator_state.h"
#include "muster/messages/status/status_codec.h"

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

}  // namespace muster
