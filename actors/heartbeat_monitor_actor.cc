#include "muster/actors/heartbeat_monitor_actor.h"

#include <algorithm>
#include <memory>
#include <optional>

#include <caf/local_actor.hpp>

#include "muster/actors/cluster_view.h"
#include "muster/actors/heartbeat_deadlines.h"
#include "muster/messages/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

struct MonitorState {
  static inline const char* name = "muster.heartbeat_monitor";
  uint64_t leader_incarnation = 0;
  std::optional<HeartbeatDeadlines> deadlines;
  bool armed = false;  // a deadline_atom is pending
};

using MonitorPointer = HeartbeatMonitorActor::stateful_pointer<MonitorState>;

// Keeps one timer pending for the earliest deadline (deadlines only move later, so a timer set
// earlier fires no later than any live deadline).
void Arm(MonitorPointer self) {
  auto& st = self->state;
  if (st.armed) return;
  auto next = st.deadlines->Next();
  if (!next) return;
  st.armed = true;
  auto delay = std::max(*next - self->clock().now(), caf::timespan{0});
  self->delayed_send(self, delay, deadline_atom::value);
}

void OnDeadline(MonitorPointer self) {
  self->state.armed = false;
  for (auto& expired : self->state.deadlines->TakeExpired(self->clock().now())) {
    self->send(expired.actor, deadline_atom::value, expired.incarnation);
  }
  Arm(self);
}

bool Beat(MonitorPointer self, const proto::HeartbeatRequest& beat) {
  return self->state.deadlines->Beat(TaskName(beat.source_task()), beat.incarnation(),
                                     self->clock().now());
}

// The answer to a batch, delivered once the beats handed to task actors are answered.
struct PendingBatch {
  proto::HeartbeatBatchResponse response;
  caf::typed_response_promise<proto::HeartbeatBatchResponse> promise;
  size_t waiting = 0;
  void Done() {
    if (--waiting == 0) promise.deliver(std::move(response));
  }
};

caf::result<proto::HeartbeatBatchResponse> BeatAll(MonitorPointer self,
                                                   const proto::HeartbeatBatchRequest& batch,
                                                   const std::vector<TaskActor>& actors) {
  auto pending = std::make_shared<PendingBatch>();
  pending->response.set_leader_incarnation(self->state.leader_incarnation);
  pending->waiting = 1;  // released below, after the loop
  for (int i = 0; i < batch.beats_size(); ++i) {
    const auto& beat = batch.beats(i);
    auto* result = pending->response.add_results();
    *result->mutable_task() = beat.source_task();
    if (Beat(self, beat)) continue;
    if (static_cast<size_t>(i) >= actors.size() || !actors[i]) {
      SetStatusFields(UnknownTaskError("Unexpected heartbeat request from task: ",
                                       beat.source_task()),
                      result);
      continue;
    }
    ++pending->waiting;
    self->request(actors[i], caf::infinite, beat)
        .then([pending](const proto::HeartbeatResponse&) { pending->Done(); },
              [pending, i](caf::error& error) {
                SetStatusFields(ToStatus(error), pending->response.mutable_results(i));
                pending->Done();
              });
  }
  pending->promise = self->make_response_promise<proto::HeartbeatBatchResponse>();
  auto promise = pending->promise;
  pending->Done();
  return promise;
}

HeartbeatMonitorActor::behavior_type MonitorBehavior(MonitorPointer self,
                                                     uint64_t leader_incarnation,
                                                     caf::timespan timeout) {
  self->state.leader_incarnation = leader_incarnation;
  self->state.deadlines.emplace(timeout);
  return {
      [=](const proto::HeartbeatRequest& beat,
          const TaskActor& actor) -> caf::result<proto::HeartbeatResponse> {
        if (!Beat(self, beat)) return self->delegate(actor, beat);
        proto::HeartbeatResponse ok;
        ok.set_leader_incarnation(self->state.leader_incarnation);
        Arm(self);
        return ok;
      },
      [=](const proto::HeartbeatBatchRequest& batch, const std::vector<TaskActor>& actors) {
        auto result = BeatAll(self, batch, actors);
        Arm(self);
        return result;
      },
      [=](hb_watch_atom, const proto::CoordinatedTask& task, uint64_t incarnation,
          const TaskActor& actor) {
        self->state.deadlines->Watch(TaskName(task), incarnation, actor, self->clock().now());
        Arm(self);
      },
      [=](hb_unwatch_atom, const proto::CoordinatedTask& task) {
        self->state.deadlines->Unwatch(TaskName(task));
      },
      [=](deadline_atom) { OnDeadline(self); },
  };
}

}  // namespace

HeartbeatMonitorActor SpawnHeartbeatMonitor(caf::local_actor* owner, uint64_t leader_incarnation,
                                            caf::timespan timeout) {
  return owner->spawn<caf::linked>(MonitorBehavior, leader_incarnation, timeout);
}

}  // namespace muster
