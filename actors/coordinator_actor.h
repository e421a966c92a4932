// The coordinator: the root of the leader's actor tree and the entry point that workers reach
// over the network. It routes each request to the actor that owns the state and supervises
// those actors (see docs/architecture.md).
//
//   RUNNING --(exit)--> STOPPED
#pragma once

#include <cstdint>

#include <caf/actor_system.hpp>

#include "muster/messages/interfaces.h"
#include "muster/proto/coordination_config.pb.h"

namespace muster {

struct CoordinatorOptions {
  proto::CoordinationServiceConfig config;
  // The leader incarnation returned to every task; 0 draws a random one.
  uint64_t incarnation = 0;
};

// Spawns a coordinator for the jobs in `options.config`.
CoordinatorActor SpawnCoordinator(caf::actor_system& system, CoordinatorOptions options);

}  // namespace muster
