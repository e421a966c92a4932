// Connects a worker process to its leader without blocking the caller or an actor's thread: one
// handshake at a time, each bounded by a timeout, retried with jittered exponential backoff
// until the overall deadline. A frozen leader costs one attempt timeout per try, never a hang.
// (The TCP connect itself is CAF's middleman actor's, which waits in it for at most
// NodeOptions::connect_timeout (DialTcp); it connects once per address for all the agents of a
// process, which CAF 0.17's BASP needs: it races between simultaneous handshakes of one node.)
//
// What failed decides what happens next:
//  - nothing listens at the address (the connection was refused, ECONNREFUSED; the middleman's
//    error does not say so, a ConnectProbe finds out): with wait_for_leader (a leader that is not
//    up yet is normal at job start) the connector retries until the deadline, else it fails at once
//    with Unavailable "nothing listening at HOST:PORT";
//  - the leader closed the connection before CAF's handshake: when this node's own TLS
//    handshake was rejected (another CA, a plain leader) that never heals, and it fails at once
//    with Unavailable; otherwise (TLS on the leader's side only, or the leader's limits, which
//    may clear) it is retried with wait_for_leader, and fails at once without;
//  - anything else (a frozen leader, no route yet): retried until the deadline.
//
//   IDLE --connect--> TRYING --published actor--> DONE (replies, quits)
//                      |   |  ^
//      CAF could not   |   |  | retry (after backoff)
//      connect         v   v  |
//                 PROBING --> BACKOFF --deadline passed--> FAILED (DeadlineExceeded, quits)
//   TRYING --TLS rejected, or refused handshake without wait_for_leader--> FAILED (Unavailable)
//   PROBING --nothing listening, without wait_for_leader--> FAILED (Unavailable)
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>

#include "muster/messages/vocabulary/atoms.h"
#include "muster/messages/vocabulary/interfaces.h"

namespace muster {

struct EtcdSecurity;  // net/agent/session/etcd/etcd_security.h

struct ConnectOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  // Give up after this long.
  caf::timespan timeout = std::chrono::seconds(30);
  // A refused connection (nothing listening at the address) means the leader is not up yet:
  // retry until `timeout`. false: fail at once with Unavailable "nothing listening at ...".
  bool wait_for_leader = true;
  // One handshake may take this long (a frozen leader accepts TCP but never answers).
  caf::timespan attempt_timeout = std::chrono::seconds(1);
  caf::timespan initial_backoff = std::chrono::milliseconds(20);
  caf::timespan max_backoff = std::chrono::seconds(1);
  // The other leaders of an HA job ("HOST:PORT" each; net/ha/ha_leader.h). The connector uses
  // host and port only; a leader session (leader_session_actor.h) given others tries each in
  // turn and follows a standby's answer to the active leader.
  std::vector<std::string> other_leaders;
  // Where an HA job's leaders are registered ("etcd://ENDPOINTS/NAME"; empty: nowhere). A leader
  // session with other_leaders reads them again after a round in which none of those it knows
  // took it: a leader may have started since (one that replaced a lost host).
  std::string registry;
  // How to reach that etcd (TLS, user), taken when the agent was created: a session's reads of
  // the registry run on threads of their own, which must not read the environment.
  std::shared_ptr<const EtcdSecurity> registry_security;
};

using LeaderConnectorActor =
    caf::typed_actor<caf::replies_to<caf::connect_atom>::with<CoordinatorActor>,
                     caf::reacts_to<retry_atom>, caf::reacts_to<caf::tick_atom>>;

// Spawns a connector; request connect_atom from it once. It answers with the leader's
// coordinator handle; DeadlineExceeded naming the address, the attempts and the last error
// (and "nothing listening at HOST:PORT" when connections were refused); or Unavailable at once
// for a rejected TLS handshake, and without wait_for_leader for a refused connection or
// handshake. It quits without answering when the requester is gone.
LeaderConnectorActor SpawnLeaderConnector(caf::actor_system& system, ConnectOptions options);

}  // namespace muster
