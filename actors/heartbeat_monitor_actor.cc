#include "muster/actors/heartbeat_monitor_actor.h"

#include <chrono>

#include <absl/strings/str_cat.h>
#include <caf/local_actor.hpp>

#include "muster/messages/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

struct MonitorState {
  static inline const char* name = "muster.heartbeat_monitor";
  proto::CoordinatedTask task;
  caf::timespan timeout{0};
  caf::actor_clock::time_point deadline;
};

using MonitorPointer = HeartbeatMonitorActor::stateful_pointer<MonitorState>;

absl::Status HeartbeatTimeout(const MonitorState& st) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(st.timeout).count();
  return MakeCoordinationError(
      absl::UnavailableError(absl::StrCat(
          "Task ", TaskName(st.task), " heartbeat timeout: no heartbeat for ", ms,
          " ms. This indicates that the task has failed, got preempted, is frozen, or lost its "
          "network; restart it (or reset it if its job is recoverable).")),
      st.task);
}

void OnDeadline(MonitorPointer self) {
  auto now = self->clock().now();
  if (now >= self->state.deadline) {
    self->quit(ToError(HeartbeatTimeout(self->state)));
    return;
  }
  self->delayed_send(self, self->state.deadline - now, deadline_atom::value);
}

HeartbeatMonitorActor::behavior_type MonitorBehavior(MonitorPointer self,
                                                     proto::CoordinatedTask task,
                                                     caf::timespan timeout) {
  self->state.task = std::move(task);
  self->state.timeout = timeout;
  self->state.deadline = self->clock().now() + timeout;
  self->delayed_send(self, timeout, deadline_atom::value);
  return {
      [=](beat_atom) { self->state.deadline = self->clock().now() + self->state.timeout; },
      [=](deadline_atom) { OnDeadline(self); },
  };
}

}  // namespace

HeartbeatMonitorActor SpawnHeartbeatMonitor(caf::local_actor* owner,
                                            const proto::CoordinatedTask& task,
                                            caf::timespan timeout) {
  return owner->spawn<caf::linked>(MonitorBehavior, task, timeout);
}

}  // namespace muster
