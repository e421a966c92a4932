// The coordinator's heartbeat routing: a beat (a request, or sent one-way) or a batch of beats
// is checked against the task table, its step recorded, and handed to the heartbeat monitor
// with the task's slot and actor. With a state writer, a refusal (a task in ERROR) is told once
// the task states persisted before it are durable, as every failure the leader tells.
#include <type_traits>
#include <utility>

#include "muster/actors/cluster/cluster_view.h"
#include "muster/actors/coordinator/coordinator_state.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

// The task slot a heartbeat refreshes, after its checks (unknown task, acting as another).
absl::StatusOr<TaskSlot*> BeatingSlot(CoordinatorPointer self,
                                      const proto::HeartbeatRequest& request) {
  auto& st = self->state;
  TaskSlot* slot = st.tasks.Find(request.source_task());
  if (slot == nullptr) {
    return UnknownTaskError("Unexpected heartbeat request from task: ", request.source_task());
  }
  if (absl::Status own = ActsAsItself(self, request.source_task()); !own.ok()) return own;
  slot->last_heartbeat = self->clock().now();
  RecordProgress(self, request, *slot);
  return slot;
}

// A heartbeat sent one-way (not as a request): it is judged as a request would be, but only an
// error is told, pushed to the sending agent as a ReportErrorToTaskRequest. A beat that is
// accepted costs no reply on the wire.
void OneWayHeartbeat(CoordinatorPointer self, const proto::HeartbeatRequest& request) {
  auto agent = caf::actor_cast<AgentActor>(self->current_sender());
  auto slot = BeatingSlot(self, request);
  if (!slot.ok()) {
    if (agent) self->send(agent, ErrorReport(slot.status(), request.source_task()));
    return;
  }
  // While task states are on their way to disk, a refusal (a task in ERROR) waits for them.
  if (self->state.records.gate().idle()) {
    self->send(self->state.heartbeats, request, (*slot)->index, (*slot)->actor, agent);
    return;
  }
  self->request(self->state.heartbeats, caf::infinite, request, (*slot)->index, (*slot)->actor)
      .then([](const proto::HeartbeatResponse&) {},
            [self, agent, task = request.source_task()](caf::error& error) {
              absl::Status status = ToStatus(error);
              if (agent && GetCoordinationError(status)) {
                SendErrorOnceDurable(self, agent, ErrorReport(status, task));
              }
            });
}

// The monitor's answer to `beat...`. While task states are on their way to disk (rarely: only
// task state changes are), a refusal waits for them, and is left unanswered when the write
// failed and pauses the leader (LeavesCallsUnanswered); a batch's refusals are its failures.
// Otherwise, and for the beats accepted, delegated: no pending request per beat.
template <class Response, class... Beat>
caf::result<Response> RefusalOnceDurable(CoordinatorPointer self, Beat&&... beat) {
  if (self->state.records.gate().idle()) {
    return self->delegate(self->state.heartbeats, std::forward<Beat>(beat)...);
  }
  auto promise = self->make_response_promise<Response>();
  self->request(self->state.heartbeats, caf::infinite, std::forward<Beat>(beat)...)
      .then(
          [self, promise](Response& response) mutable {
            if constexpr (std::is_same_v<Response, proto::HeartbeatBatchResponse>) {
              if (response.failures_size() > 0) {
                return AnswerOnceDurable(self, promise, std::move(response));
              }
            }
            promise.deliver(std::move(response));
          },
          [self, promise](caf::error& error) mutable {
            AnswerOnceDurable(self, promise, std::move(error));
          });
  return promise;
}

}  // namespace

// Routes a heartbeat to the heartbeat monitor with its task's actor.
caf::result<proto::HeartbeatResponse> Heartbeat(CoordinatorPointer self,
                                                const proto::HeartbeatRequest& request) {
  if (!self->current_message_id().is_request()) {
    OneWayHeartbeat(self, request);
    return caf::delegated<proto::HeartbeatResponse>{};  // nothing to answer
  }
  auto slot = BeatingSlot(self, request);
  if (!slot.ok()) return ToError(slot.status());
  return RefusalOnceDurable<proto::HeartbeatResponse>(self, request, (*slot)->index,
                                                      (*slot)->actor);
}

caf::result<proto::HeartbeatBatchResponse> HeartbeatBatch(CoordinatorPointer self,
                                                          proto::HeartbeatBatchRequest& request) {
  auto& st = self->state;
  auto now = self->clock().now();
  std::vector<uint32_t> slots;
  std::vector<TaskActor> actors;
  slots.reserve(request.beats_size());
  actors.reserve(request.beats_size());
  // A batch comes from one process: one beat acting as another node's task refuses the batch.
  for (const auto& beat : request.beats()) {
    if (absl::Status own = ActsAsItself(self, beat.source_task()); !own.ok()) return ToError(own);
  }
  for (const auto& beat : request.beats()) {
    TaskSlot* slot = st.tasks.Find(beat.source_task());
    if (slot == nullptr) {
      slots.push_back(kNoTaskSlot);
      actors.emplace_back();
      continue;
    }
    slot->last_heartbeat = now;
    RecordProgress(self, beat, *slot);
    slots.push_back(slot->index);
    actors.push_back(slot->actor);
  }
  return RefusalOnceDurable<proto::HeartbeatBatchResponse>(self, std::move(request),
                                                           std::move(slots), std::move(actors));
}

}  // namespace muster
