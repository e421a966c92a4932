#include "muster/actors/barriers/barrier_actor.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include <absl/container/flat_hash_map.h>
#include <caf/actor_cast.hpp>
#include <caf/actor_clock.hpp>
#include <caf/system_messages.hpp>

#include "muster/actors/caf/hardening.h"
#include "muster/actors/caf/placement.h"
#include "muster/actors/durability/durable_gate.h"
#include "muster/actors/durability/state_store.h"
#include "muster/messages/status/status_codec.h"

namespace muster {
namespace {

static_assert(std::is_same_v<caf::actor_clock::time_point, BarrierClock::time_point>,
              "barrier deadlines use the actor clock's time points");

using BarrierPromise = caf::typed_response_promise<proto::BarrierResponse>;

struct BarrierActorState {
  static inline const char* name = "muster.barrier";
  std::unique_ptr<BarrierState> barrier;
  BarrierParentActor parent;
  // The parked call of each participant that arrived, by participant index.
  absl::flat_hash_map<int, BarrierPromise> parked;
  // With a state dir: the result reaches the participants once it is recorded.
  DurableGate durable;
};

using BarrierPointer = BarrierActor::stateful_pointer<BarrierActorState>;

void Deliver(BarrierPromise& promise, const absl::Status& status, int64_t counter) {
  if (!status.ok()) {
    promise.deliver(ToError(status));
    return;
  }
  proto::BarrierResponse response;
  response.set_counter(counter);
  promise.deliver(std::move(response));
}

// Records the result in the state dir (when there is one).
void PersistResult(BarrierPointer self) {
  const BarrierState& barrier = *self->state.barrier;
  if (!self->state.durable.enabled()) return;
  proto::BarrierRecord record;
  record.set_id(barrier.id());
  record.set_counter(barrier.counter());
  *record.mutable_result() = StoreStatus(barrier.result());
  StateBatch batch;
  batch.Put(BarrierStateKey(barrier.id()), record.SerializeAsString());
  self->state.durable.Persist(self, std::move(batch));
}

// How long the instance waited, and who had not arrived at an instance that failed (at most 64
// of them listed).
proto::BarrierInfo EndOf(const BarrierState& barrier, BarrierClock::time_point now) {
  proto::BarrierInfo end;
  const BarrierSpec& spec = barrier.spec();
  end.set_waited_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(now - (spec.deadline - spec.timeout))
          .count());
  if (barrier.result().ok()) return end;
  constexpr int kMaxListed = 64;
  end.set_arrived(barrier.arrived());
  end.set_total(barrier.total());
  for (auto& task : barrier.Missing()) {
    if (end.waiting_for_size() == kMaxListed) break;
    *end.add_waiting_for() = std::move(task);
  }
  return end;
}

// Tells the parent first: a task that learns the result and calls again reaches the parent
// after the parent learned that this instance finished. With a state dir the participants
// learn it once it is recorded.
void AnswerAll(BarrierPointer self) {
  auto& state = self->state;
  const BarrierState& barrier = *state.barrier;
  if (state.parent) {
    self->send(state.parent, barrier_done_atom::value, barrier.id(), barrier.counter(),
               ToError(barrier.result()), EndOf(barrier, self->clock().now()));
  }
  PersistResult(self);
  state.durable.After(
      [self, parked = std::move(state.parked)](const absl::Status& written) mutable {
        const BarrierState& barrier = *self->state.barrier;
        if (LeavesCallsUnanswered(written)) return;
        for (auto& [index, promise] : parked) {
          if (written.ok()) {
            Deliver(promise, barrier.result(), barrier.counter());
          } else {
            promise.deliver(ToError(written));
          }
        }
      });
  state.parked.clear();
}

// Carries out `effects`; `caller` is the promise of the current call, if any.
void Apply(BarrierPointer self, BarrierEffects effects, BarrierPromise* caller) {
  auto& state = self->state;
  for (auto& [index, status] : effects.cancel) {
    auto it = state.parked.find(index);
    if (it == state.parked.end()) continue;
    it->second.deliver(ToError(status));
    state.parked.erase(it);
  }
  if (effects.park && caller != nullptr) state.parked.insert_or_assign(*effects.park, *caller);
  if (effects.finished) AnswerAll(self);
  if (effects.reply && caller != nullptr) {
    BarrierPromise promise = *caller;
    absl::Status reply = *effects.reply;
    state.durable.After([self, promise, reply](const absl::Status& written) mutable {
      if (LeavesCallsUnanswered(written)) return;
      Deliver(promise, written.ok() ? reply : written, self->state.barrier->counter());
    });
  }
}

caf::result<proto::BarrierResponse> OnBarrier(BarrierPointer self,
                                              const proto::BarrierRequest& request) {
  BarrierPromise promise = self->make_response_promise<proto::BarrierResponse>();
  Apply(self, self->state.barrier->Arrive(request), &promise);
  return promise;
}

caf::result<proto::CancelBarrierResponse> OnCancel(BarrierPointer self,
                                                   const proto::CancelBarrierRequest& request) {
  BarrierEffects effects = self->state.barrier->Cancel(request);
  absl::Status reply = effects.reply.value_or(absl::OkStatus());
  Apply(self, std::move(effects), nullptr);
  return CancelBarrierReply(reply);
}

proto::GetBarriersResponse OnGetBarriers(BarrierPointer self) {
  proto::GetBarriersResponse response;
  auto info = self->state.barrier->Info(self->clock().now());
  if (info) *response.add_barriers() = std::move(*info);
  return response;
}

// The service is going away: abort the waiters, then stop (once a result being recorded is
// on disk and delivered).
// A durable leader's stop (or loss) is a pause: the waiting calls are not answered, their
// agents re-send them to the restarted leader.
void Stop(BarrierPointer self, bool pause) {
  if (!pause) Apply(self, self->state.barrier->Shutdown(), nullptr);
  self->state.durable.After([self](const absl::Status&) { self->quit(); });
}

void Init(BarrierPointer self, BarrierSpec spec, BarrierParentActor parent) {
  auto& state = self->state;
  BarrierClock::time_point deadline = spec.deadline;
  StateWriterActor writer = spec.writer;
  state.barrier = std::make_unique<BarrierState>(std::move(spec));
  state.parent = std::move(parent);
  state.durable = DurableGate(std::move(writer));
  self->set_exit_handler([self](caf::exit_msg& msg) { Stop(self, IsLeaderPause(msg.reason)); });
  self->set_down_handler([self](caf::down_msg& msg) {
    if (msg.source == self->state.parent.address()) Stop(self, self->state.durable.enabled());
  });
  if (state.parent) self->monitor(state.parent);
  // A test clock delivers a due message only when time advances: send an expired deadline now.
  auto me = caf::actor_cast<BarrierActor>(self);
  if (deadline <= self->clock().now()) {
    self->send(me, deadline_atom::value);
  } else {
    self->scheduled_send(me, deadline, deadline_atom::value);
  }
}

BarrierActor::behavior_type BarrierBehavior(BarrierPointer self, BarrierSpec spec,
                                            BarrierParentActor parent) {
  HostOnNetworkThread(self);
  DropUnexpectedMessages(self);
  Init(self, std::move(spec), std::move(parent));
  return {
      [self](const proto::BarrierRequest& request) { return OnBarrier(self, request); },
      [self](const proto::CancelBarrierRequest& request) { return OnCancel(self, request); },
      [self](const proto::CoordinatedTaskStateInfo& info) {
        Apply(self, self->state.barrier->TaskStateChanged(info), nullptr);
      },
      [self](const proto::GetBarriersRequest&) { return OnGetBarriers(self); },
      [self](deadline_atom) {
        Apply(self, self->state.barrier->DeadlineReached(self->clock().now()), nullptr);
      },
  };
}

}  // namespace

BarrierActor SpawnBarrier(caf::actor_system& system, BarrierSpec spec, BarrierParentActor parent) {
  return system.spawn(BarrierBehavior, std::move(spec), std::move(parent));
}

caf::result<proto::BarrierResponse> BarrierReply(
    const absl::StatusOr<proto::BarrierResponse>& reply) {
  if (!reply.ok()) return ToError(reply.status());
  return *reply;
}

caf::result<proto::CancelBarrierResponse> CancelBarrierReply(const absl::Status& reply) {
  if (!reply.ok()) return ToError(reply);
  return proto::CancelBarrierResponse();
}

void SortBarrierInfos(proto::GetBarriersResponse* response) {
  auto* barriers = response->mutable_barriers();
  std::sort(barriers->begin(), barriers->end(),
            [](const proto::BarrierInfo& a, const proto::BarrierInfo& b) {
              if (a.barrier_id() != b.barrier_id()) return a.barrier_id() < b.barrier_id();
              return a.counter() < b.counter();
            });
}

}  // namespace muster
