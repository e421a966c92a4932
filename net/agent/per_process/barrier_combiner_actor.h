// The barrier combiner of a worker process that hosts several tasks. Their agents send their
// barrier calls here instead of to the leader; the combiner sends the calls for one barrier
// instance that reach it in the same turn of its mailbox as one BarrierGroupRequest, and the
// leader answers the group with one message when the barrier is done, instead of one per task.
// Nothing waits for a timer: a group leaves as soon as the combiner has read its mailbox.
// The difference to single calls: a call the leader refuses at once (wrong counter, not a
// participant) is answered with its group, when the barrier is done or times out.
//
//   IDLE --call--> GATHERING (flush queued behind the calls already in the mailbox)
//        <--flush-- (one group per leader and barrier instance sent)
#pragma once

#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include "muster/messages/vocabulary/atoms.h"
#include "muster/messages/vocabulary/interfaces.h"

namespace muster {

using BarrierCombinerActor = caf::typed_actor<
    // A task's barrier call (source task and counter set) for `leader`. Possible errors: those
    // of BarrierRequest; transport errors of the group go to every call in it.
    caf::replies_to<proto::BarrierRequest, CoordinatorActor>::with<proto::BarrierResponse>,
    // Sends what was gathered.
    caf::reacts_to<flush_atom>>;

// `slack`: how long past the barrier's own timeout the combiner waits for the leader.
BarrierCombinerActor SpawnBarrierCombiner(caf::actor_system& system,
                                          caf::timespan slack = std::chrono::seconds(5));

}  // namespace muster
