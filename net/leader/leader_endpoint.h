// Makes a coordinator reachable from other processes: publishes it on a TCP port.
#pragma once

#include <cstdint>
#include <string>

#include <absl/status/statusor.h>
#include <caf/actor_system.hpp>

#include "muster/messages/vocabulary/interfaces.h"

namespace muster {

// Publishes `coordinator` on `host:port` (port 0 picks a free port; host "" or "0.0.0.0"
// listens on every interface) with address reuse, and returns the bound port. On a node set up
// by ConfigureNode, peers may then send messages to `coordinator` alone (FrameGuard).
// Possible errors: Unavailable (the port cannot be opened), naming host, port and the cause;
// ResourceExhausted (PublishedActors::kCapacity coordinators published on this node already).
absl::StatusOr<uint16_t> PublishCoordinator(caf::actor_system& system,
                                            const CoordinatorActor& coordinator, uint16_t port,
                                            const std::string& host = "127.0.0.1");

// Closes `port` for `coordinator` (published by PublishCoordinator) and frees its place among
// the node's published actors: peers may no longer send it messages.
void UnpublishCoordinator(caf::actor_system& system, const CoordinatorActor& coordinator,
                          uint16_t port);

}  // namespace muster
