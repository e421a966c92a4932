#include "muster/actors/tasks/heartbeat_monitor_actor.h"

#include <algorithm>
#include <memory>
#include <optional>

#include <caf/local_actor.hpp>

#include "muster/actors/caf/hardening.h"
#include "muster/actors/caf/placement.h"
#include "muster/actors/cluster/cluster_view.h"
#include "muster/actors/tasks/heartbeat_deadlines.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/vocabulary/group_reply.h"

namespace muster {
namespace {

struct MonitorState {
  static inline const char* name = "muster.heartbeat_monitor";
  uint64_t leader_incarnation = 0;
  std::optional<HeartbeatDeadlines> deadlines;
  bool armed = false;                // a deadline_atom is pending
  caf::actor_clock::time_point due;  // when the pending deadline_atom should arrive
  bool deferred = false;             // the pending deadline_atom is the grace after a late one
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
  const auto now = self->clock().now();
  auto delay = std::max(*next - now, caf::timespan{0});
  st.due = now + delay;
  self->delayed_send(self, delay, deadline_atom::value);
}

// A timer that comes more than a quarter timeout late means that this process did not run
// meanwhile (it was stopped, swapped out, or starved), and the tasks' beats of that time wait
// unread in its mailbox and sockets. The verdict waits a quarter timeout more, once, for them:
// then every task whose deadline passed without a beat is judged as ever. (An HA leader paused
// past its lease is the case that matters: on waking it must not tell the tasks that each other
// died, for its own silence, while its successor serves them; it steps down within that grace.)
void OnDeadline(MonitorPointer self) {
  auto& st = self->state;
  st.armed = false;
  const auto now = self->clock().now();
  const caf::timespan grace = st.deadlines->timeout() / 4;
  if (!st.deferred && now - st.due > grace) {
    st.deferred = true;
    st.armed = true;
    st.due = now + grace;
    self->delayed_send(self, grace, deadline_atom::value);
    return;
  }
  st.deferred = false;
  for (auto& expired : st.deadlines->TakeExpired(now)) {
    SendTaskEvent(self, expired.actor, TaskEvent::kHeartbeatDeadline, expired.incarnation);
  }
  Arm(self);
}

caf::result<proto::HeartbeatBatchResponse> BeatAll(MonitorPointer self,
                                                   const proto::HeartbeatBatchRequest& batch,
                                                   const std::vector<uint32_t>& slots,
                                                   const std::vector<TaskActor>& actors) {
  auto& st = self->state;
  auto now = self->clock().now();
  auto promise = self->make_response_promise<proto::HeartbeatBatchResponse>();
  auto reply = std::make_shared<GroupReply<proto::HeartbeatBatchResponse>>(promise);
  reply->response().set_leader_incarnation(st.leader_incarnation);
  for (int i = 0; i < batch.beats_size(); ++i) {
    const auto& beat = batch.beats(i);
    size_t at = static_cast<size_t>(i);
    uint32_t slot = at < slots.size() ? slots[at] : kNoTaskSlot;
    if (slot != kNoTaskSlot && st.deadlines->Beat(slot, beat.incarnation(), now)) continue;
    if (slot == kNoTaskSlot || at >= actors.size() || !actors[at]) {
      reply->Fail(i, beat.source_task(),
                  UnknownTaskError("Unexpected heartbeat request from task: ", beat.source_task()));
      continue;
    }
    reply->Expect();
    self->request(actors[at], caf::infinite, beat)
        .then([reply](const proto::HeartbeatResponse&) { reply->Done(); },
              [reply, i, task = beat.source_task()](caf::error& error) {
                reply->Fail(i, task, ToStatus(error));
                reply->Done();
              });
  }
  reply->Done();
  return promise;
}

HeartbeatMonitorActor::behavior_type MonitorBehavior(MonitorPointer self,
                                                     uint64_t leader_incarnation,
                                                     caf::timespan timeout) {
  HostOnNetworkThread(self);
  DropErrorMessages(self);
  DropUnexpectedMessages(self);
  self->state.leader_incarnation = leader_incarnation;
  self->state.deadlines.emplace(timeout);
  return {
      [=](const proto::HeartbeatRequest& beat, uint32_t slot,
          const TaskActor& actor) -> caf::result<proto::HeartbeatResponse> {
        if (!self->state.deadlines->Beat(slot, beat.incarnation(), self->clock().now())) {
          return self->delegate(actor, beat);  // answered in the coordinator's name
        }
        proto::HeartbeatResponse ok;
        ok.set_leader_incarnation(self->state.leader_incarnation);
        Arm(self);
        return ok;
      },
      [=](const proto::HeartbeatRequest& beat, uint32_t slot, const TaskActor& actor,
          const AgentActor& agent) {
        if (self->state.deadlines->Beat(slot, beat.incarnation(), self->clock().now())) {
          Arm(self);
          return;
        }
        self->request(actor, caf::infinite, beat)
            .then([](const proto::HeartbeatResponse&) {},
                  [self, agent, task = beat.source_task()](caf::error& error) {
                    // The task actor's refusal; not a transport error (a task actor that just
                    // died: the next beat reaches the one restarted in its place).
                    absl::Status status = ToStatus(error);
                    if (agent && GetCoordinationError(status)) {
                      self->send(agent, ErrorReport(status, task));
                    }
                  });
      },
      [=](const proto::HeartbeatBatchRequest& batch, const std::vector<uint32_t>& slots,
          const std::vector<TaskActor>& actors) {
        auto result = BeatAll(self, batch, slots, actors);
        Arm(self);
        return result;
      },
      [=](hb_watch_atom, uint32_t slot, uint64_t incarnation, const TaskActor& actor) {
        self->state.deadlines->Watch(slot, incarnation, actor, self->clock().now());
        Arm(self);
      },
      [=](hb_unwatch_atom, uint32_t slot) { self->state.deadlines->Unwatch(slot); },
      [=](deadline_atom) { OnDeadline(self); },
  };
}

}  // namespace

HeartbeatMonitorActor SpawnHeartbeatMonitor(caf::local_actor* owner, uint64_t leader_incarnation,
                                            caf::timespan timeout) {
  return owner->spawn<caf::linked>(MonitorBehavior, leader_incarnation, timeout);
}

}  // namespace muster
