// The heartbeat batcher of a worker process that hosts several tasks. Their agents send their
// heartbeats here instead of to the leader; the batcher gathers the beats that arrive within
// one window and sends them as one HeartbeatBatchRequest per leader, then answers every agent
// with its own beat's result (the leader's errors included, with their coordination payload).
// A beat waits at most one window; the leader handles one message per window per process
// instead of one per task. Agents use it through AgentOptions::heartbeat_batcher.
//
//   IDLE --beat--> GATHERING (flush timer set) --window passed--> IDLE (batch sent)
#pragma once

#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include "muster/messages/vocabulary/atoms.h"
#include "muster/messages/vocabulary/interfaces.h"

namespace muster {

using HeartbeatBatcherActor = caf::typed_actor<
    // A task's heartbeat for `leader`. Possible errors: those of HeartbeatRequest; transport
    // errors of the batch (DeadlineExceeded, Unavailable) go to every beat in it.
    caf::replies_to<proto::HeartbeatRequest, CoordinatorActor>::with<proto::HeartbeatResponse>,
    // Timer: the window has passed.
    caf::reacts_to<flush_atom>>;

struct HeartbeatBatcherOptions {
  // How long the first beat of a batch waits for others.
  caf::timespan window = std::chrono::milliseconds(20);
  // Timeout of a batch request to the leader.
  caf::timespan timeout = std::chrono::seconds(5);
};

HeartbeatBatcherActor SpawnHeartbeatBatcher(caf::actor_system& system,
                                            HeartbeatBatcherOptions options = {});

}  // namespace muster
