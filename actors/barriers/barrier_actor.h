// A barrier actor runs one barrier instance (BarrierState): it parks the calls of the waiting
// tasks as response promises and answers all of them when the instance finishes. Its parent
// (the coordinator) creates it on the instance's first call, delegates every later call to it,
// and pushes the participants' task states to it.
//
//   WAITING --finished (passed, timed out, cancelled, failed)--> FINISHED
//      |       sends (barrier_done_atom, id, counter, result, end) to the parent, answers
//      |       every call
//      +--exit message / parent down--> Aborted to every waiter --> STOPPED
//   FINISHED --late call--> stored result;  --exit message / parent down--> STOPPED
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/replies_to.hpp>
#include <caf/result.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "muster/actors/barriers/barrier_state.h"
#include "muster/actors/fan_in.h"
#include "muster/messages/vocabulary/atoms.h"
#include "muster/messages/vocabulary/proto_inspect.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

// One barrier instance.
using BarrierActor = caf::typed_actor<
    // A task's call. Answered when the instance finishes (or at once once it has finished).
    // Possible errors: DeadlineExceeded (timed out), Cancelled (cancelled; replaced by a newer
    // call of the same task; stale call of a recoverable task), Internal (participant failed or
    // left, counter mismatch), InvalidArgument (conflicting task list, non-participant),
    // Aborted (service shutting down). Every error carries a BarrierError payload.
    caf::replies_to<proto::BarrierRequest>::with<proto::BarrierResponse>,
    // Cancels the instance for every waiter and every later call with the same counter.
    // Possible errors: FailedPrecondition (already finished, counter mismatch).
    caf::replies_to<proto::CancelBarrierRequest>::with<proto::CancelBarrierResponse>,
    // A participant's new state: ERROR, DISCONNECTED, or CONNECTED after a registration (with
    // its incarnation). Push it before answering the request that caused the change, so that
    // the task's next call reaches the actor after it.
    caf::reacts_to<proto::CoordinatedTaskStateInfo>,
    // The instance while it is open (zero or one BarrierInfo).
    caf::replies_to<proto::GetBarriersRequest>::with<proto::GetBarriersResponse>,
    // The instance's deadline timer.
    caf::reacts_to<deadline_atom>>;

// The parent of barrier actors, told when an instance finishes. `end` says who had not arrived
// at an instance that failed (arrived, total and at most 64 of waiting_for; empty when it
// passed), for the parent's event (proto::JobEvent).
using BarrierParentActor = caf::typed_actor<
    caf::reacts_to<barrier_done_atom, std::string, int64_t, caf::error, proto::BarrierInfo>>;

// Spawns the actor of the instance `spec`. It tells `parent` when the instance finishes, then
// keeps answering late calls with the stored result until it receives an exit message. It
// monitors `parent`: when the parent goes down, or an exit message arrives while it waits,
// every waiting task gets Aborted.
BarrierActor SpawnBarrier(caf::actor_system& system, BarrierSpec spec, BarrierParentActor parent);

// Converts a reply decided without the actor into a handler result.
caf::result<proto::BarrierResponse> BarrierReply(const absl::StatusOr<proto::BarrierResponse>&);
caf::result<proto::CancelBarrierResponse> CancelBarrierReply(const absl::Status& reply);

// Orders barriers by id, then counter.
void SortBarrierInfos(proto::GetBarriersResponse* response);

// Asks every actor in `actors` for its open instance and returns a promise of all of them,
// ordered by id; actors that are gone are skipped. Call it from a handler of `self` and return
// the promise.
template <class Self>
caf::typed_response_promise<proto::GetBarriersResponse> CollectBarriers(
    Self* self, const std::vector<BarrierActor>& actors) {
  return FanIn<proto::GetBarriersResponse, proto::GetBarriersResponse>(
      self, actors, proto::GetBarriersRequest(),
      [](proto::GetBarriersResponse& merged, proto::GetBarriersResponse& part) {
        for (auto& info : *part.mutable_barriers()) *merged.add_barriers() = std::move(info);
      },
      [](proto::GetBarriersResponse& merged) { SortBarrierInfos(&merged); });
}

}  // namespace muster
