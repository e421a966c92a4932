// The coordinator's view of job health: steps carried on heartbeats and the stuck rule, barrier
// progress, the preemption protocol, and the ephemeral keys that end with their incarnation.
#include <algorithm>
#include <chrono>

#include <absl/strings/str_cat.h>

#include "muster/actors/coordinator/coordinator_state.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/status/status_macros.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

// The longest reason a preemption notice may carry.
constexpr size_t kMaxPreemptionReasonBytes = 4096;

void SendSyncPoint(CoordinatorPointer self, const AgentActor& agent, int64_t step) {
  proto::SyncPointNotice notice;
  notice.set_step(step);
  self->send(agent, notice);
}

// The sync step is decided: every connected task learns it.
void AnnounceSyncPoint(CoordinatorPointer self, int64_t step) {
  for (const auto& slot : self->state.tasks) {
    if (slot.agent) SendSyncPoint(self, slot.agent, step);
  }
}

// Sends the notice to the agent of the task at `index` and records its answer.
void AskForStep(CoordinatorPointer self, uint32_t index, const AgentActor& agent) {
  auto& st = self->state;
  self->request(agent, st.heartbeat_timeout, st.health.preemption->notice())
      .then(
          [self, index](const proto::PreemptionAck& ack) {
            auto& preemption = self->state.health.preemption;
            std::optional<int64_t> step;
            if (ack.has_step()) step = ack.step();
            if (auto sync = preemption->Answer(index, step)) AnnounceSyncPoint(self, *sync);
          },
          [self, index](const caf::error&) {
            // No answer within the heartbeat timeout: the task is gone or hung; its heartbeat
            // deadline deals with it, the others must not wait for it.
            auto& preemption = self->state.health.preemption;
            if (auto sync = preemption->Drop(index)) AnnounceSyncPoint(self, *sync);
          });
}

}  // namespace

void RecordProgress(CoordinatorPointer self, const proto::HeartbeatRequest& beat,
                    const TaskSlot& slot) {
  if (!beat.has_step()) return;
  auto& st = self->state;
  const proto::CoordinatedTaskStateInfo* info = st.tasks.view().Find(beat.source_task());
  if (info == nullptr || info->state() != proto::TASKSTATE_CONNECTED ||
      info->incarnation() != beat.incarnation()) {
    return;  // a late beat of an incarnation that ended; the monitor refuses it
  }
  st.health.progress.Report(slot.index, info->task(), beat.step(), self->clock().now());
}

void StartProgressChecks(CoordinatorPointer self) {
  auto& st = self->state;
  StuckPolicy policy = StuckPolicy::FromConfig(st.options.config);
  // Agents beat every heartbeat_timeout / 2: a task's new step may reach us that much later
  // than another task's, and the stall rule waits that long more.
  policy.grace = st.heartbeat_timeout / 2;
  st.health.progress.set_policy(policy);
  if (!policy.enabled()) return;
  // A stuck task is found at most a period after it meets a rule.
  caf::timespan period = std::chrono::milliseconds(250);
  if (st.health.progress.policy().stuck_after.count() > 0) {
    period = std::clamp<caf::timespan>(st.health.progress.policy().stuck_after / 20,
                                       std::chrono::milliseconds(50), period);
  }
  st.health.check_period = period;
  self->delayed_send(self, period, progress_check_atom::value);
}

void CheckProgress(CoordinatorPointer self) {
  auto& st = self->state;
  // Only the coordinator's own timer: another sender would start a second timer chain.
  if (self->current_sender() != self->ctrl() || st.health.check_period.count() <= 0) return;
  for (const proto::TaskStuck& stuck : st.health.progress.FindStuck(self->clock().now())) {
    const TaskSlot* slot = st.tasks.Find(stuck.task());
    const proto::CoordinatedTaskStateInfo* info = st.tasks.view().Find(stuck.task());
    if (slot == nullptr || info == nullptr) continue;
    absl::Status error = StuckTaskError(stuck);
    if (EventsWanted(self)) EmitEvent(self, TaskStuckEvent(stuck, error, info->incarnation()));
    // The task actor fails with `error`; the stuck task hears it then (OnChildDown).
    SendTaskEvent(self, slot->actor, TaskEvent::kStuck, info->incarnation(), ToError(error));
  }
  self->delayed_send(self, st.health.check_period, progress_check_atom::value);
}

void OnHealthState(CoordinatorPointer self, const TaskStateChange& change) {
  auto& health = self->state.health;
  const TaskSlot& slot = change.slot;
  if (change.ended_incarnation != 0) {
    health.progress.Forget(slot.index);
    if (health.preemption) {
      if (auto sync = health.preemption->Drop(slot.index)) AnnounceSyncPoint(self, *sync);
    }
  }
  if (change.connected() && health.preemption && slot.agent) {
    // A task that connects during or after the protocol learns of it too; its step is not
    // waited for (the others may be past it already).
    caf::anon_send(slot.agent, health.preemption->notice());  // its answer is not waited for
    if (auto sync = health.preemption->sync_step()) SendSyncPoint(self, slot.agent, *sync);
  }
}

void OnEphemeralOwnerState(CoordinatorPointer self, const TaskStateChange& change) {
  auto& st = self->state;
  // Most incarnations own no key: their end sends no message to any directory.
  if (change.ended_incarnation == 0 || !st.ephemeral.Ended(change.slot.index)) return;
  const std::string name = TaskName(change.info.task());
  for (const KvDirectoryActor& directory : st.kv.Directories()) {
    self->send(directory, drop_owner_atom::value, name, change.ended_incarnation);
  }
}

caf::result<proto::GetBarrierProgressResponse> GetBarrierProgress(
    CoordinatorPointer self, const proto::GetBarrierProgressRequest& request) {
  const std::string& id = request.barrier_id();
  if (id.empty()) {
    return ToError(MakeCoordinationError(
        absl::InvalidArgumentError("GetBarrierProgress names no barrier; pass a barrier id")));
  }
  BarrierActor actor = self->state.barriers.LiveActor(id);
  auto not_open = [id] {
    return ToError(MakeCoordinationError(absl::NotFoundError(absl::StrCat(
        "Barrier ", WireTextForMessage(id),
        " has no open instance: no task has called it yet, or its last instance finished"))));
  };
  if (!actor) return not_open();
  auto promise = self->make_response_promise<proto::GetBarrierProgressResponse>();
  self->request(actor, caf::infinite, proto::GetBarriersRequest())
      .then(
          [promise, not_open](proto::GetBarriersResponse& open) mutable {
            if (open.barriers_size() == 0) {
              promise.deliver(not_open());
              return;
            }
            proto::GetBarrierProgressResponse response;
            *response.mutable_barrier() = std::move(*open.mutable_barriers(0));
            promise.deliver(std::move(response));
          },
          [promise, not_open](caf::error&) mutable { promise.deliver(not_open()); });
  return promise;
}

caf::result<proto::NotifyPreemptionResponse> NotifyPreemption(
    CoordinatorPointer self, const proto::NotifyPreemptionRequest& request) {
  auto& st = self->state;
  const proto::CoordinatedTaskStateInfo* info = st.tasks.view().Find(request.source_task());
  if (info == nullptr) {
    return ToError(UnknownTaskError("NotifyPreemption from unknown task ", request.source_task()));
  }
  if (absl::Status own = ActsAsItself(self, request.source_task()); !own.ok()) {
    return ToError(own);
  }
  if (request.reason().size() > kMaxPreemptionReasonBytes || request.deadline_unix_ms() < 0) {
    return ToError(MakeCoordinationError(absl::InvalidArgumentError(
        absl::StrCat("NotifyPreemption from ", TaskName(request.source_task()), " has a reason of ",
                     request.reason().size(), " bytes and a deadline of ",
                     request.deadline_unix_ms(), " ms; give at most ", kMaxPreemptionReasonBytes,
                     " bytes and a deadline of 0 (unknown) or later"))));
  }
  if (info->state() != proto::TASKSTATE_CONNECTED) {
    return ToError(MakeCoordinationError(absl::FailedPreconditionError(
        absl::StrCat("NotifyPreemption from ", TaskName(request.source_task()),
                     ", which is not connected; register it first."))));
  }
  proto::NotifyPreemptionResponse response;
  if (EventsWanted(self)) EmitEvent(self, PreemptionEvent(request, !st.health.preemption));
  if (st.health.preemption) return response;  // one protocol per job: the first notice decides
  response.set_first(true);
  proto::PreemptionNotice notice;
  *notice.mutable_notified_by() = request.source_task();
  notice.set_deadline_unix_ms(request.deadline_unix_ms());
  notice.set_reason(request.reason());
  absl::flat_hash_set<uint32_t> waiting;
  for (const auto& slot : st.tasks) {
    if (slot.agent) waiting.insert(slot.index);
  }
  st.health.preemption.emplace(std::move(notice), waiting);
  for (const auto& slot : st.tasks) {
    if (slot.agent) AskForStep(self, slot.index, slot.agent);
  }
  return response;
}

absl::StatusOr<uint64_t> EphemeralOwner(CoordinatorPointer self, bool ephemeral,
                                        const proto::CoordinatedTask& source) {
  if (!ephemeral) return 0;
  const proto::CoordinatedTaskStateInfo* info = self->state.tasks.view().Find(source);
  if (info == nullptr) {
    return MakeCoordinationError(absl::InvalidArgumentError(absl::StrCat(
        "An ephemeral write names ", source.job_name().empty() ? "no task" : TaskName(source),
        " as its writer; set source_task to a task of the cluster (agents do)")));
  }
  MUSTER_RETURN_IF_ERROR(ActsAsItself(self, source));
  if (info->state() != proto::TASKSTATE_CONNECTED) {
    return MakeCoordinationError(absl::FailedPreconditionError(
        absl::StrCat("An ephemeral write by ", TaskName(source),
                     ", which is not connected: its key would end at once; register it first")));
  }
  self->state.ephemeral.Mark(self->state.tasks.SlotOf(source).index);
  return info->incarnation();
}

}  // namespace muster
