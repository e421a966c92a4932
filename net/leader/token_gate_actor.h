// The token gate: what a leader publishes when it has a job token. Every message from another
// node reaches the coordinator only once that node has presented the token
// (AuthenticateRequest); until then it is answered with Unauthenticated and changes nothing.
// The coordinator's internal messages are never accepted from another node, authenticated or
// not. Senders in this process pass. A node stays admitted while an actor it authenticated
// from lives (an agent, a CLI session; their proxies here die with the connection).
//
//   node: UNKNOWN --AuthenticateRequest(token ok)--> ADMITTED --its authenticating actor down-->
//   UNKNOWN
//                 \--wrong token--> UNKNOWN (Unauthenticated, logged once a second at most)
#pragma once

#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "muster/messages/interfaces.h"

namespace muster {

// Returns the gate as a CoordinatorActor handle, ready to publish. `token` must not be empty.
CoordinatorActor SpawnTokenGate(caf::actor_system& system, CoordinatorActor coordinator,
                                std::string token);

// Compares in time that depends only on the lengths, never on where the bytes differ.
bool TokensEqual(const std::string& presented, const std::string& expected);

}  // namespace muster
