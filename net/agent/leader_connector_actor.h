// Connects a worker process to its leader without ever blocking a thread: one handshake at a
// time, each bounded by a timeout, retried with jittered exponential backoff until the overall
// deadline. A leader that is not up yet is normal at job start; a frozen leader costs one
// attempt timeout per try, never a hang.
//
//   IDLE --connect--> TRYING --published actor--> DONE (replies, quits)
//                       |  ^
//              failure  v  | retry (after backoff)
//                     BACKOFF --deadline passed--> FAILED (replies DeadlineExceeded, quits)
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>

#include "muster/messages/atoms.h"
#include "muster/messages/interfaces.h"

namespace muster {

struct ConnectOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  // Give up after this long.
  caf::timespan timeout = std::chrono::seconds(30);
  // One handshake may take this long (a frozen leader accepts TCP but never answers).
  caf::timespan attempt_timeout = std::chrono::seconds(1);
  caf::timespan initial_backoff = std::chrono::milliseconds(20);
  caf::timespan max_backoff = std::chrono::seconds(1);
};

using LeaderConnectorActor =
    caf::typed_actor<caf::replies_to<caf::connect_atom>::with<CoordinatorActor>,
                     caf::reacts_to<retry_atom>>;

// Spawns a connector; request connect_atom from it once. It answers with the leader's
// coordinator handle, or DeadlineExceeded naming the address, the attempts and the last error.
LeaderConnectorActor SpawnLeaderConnector(caf::actor_system& system, ConnectOptions options);

}  // namespace muster
