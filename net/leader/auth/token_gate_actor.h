// The token gate: what a leader publishes when it has a job token, or when its job binds tasks
// to certificates. With a token, every message from another node reaches the coordinator only
// once that node has presented the token (AuthenticateRequest); until then it is answered with
// Unauthenticated and changes nothing. With binding, a request that acts as a task or a
// launcher passes only from a node whose certificate allows it (net/leader/auth/peer_identities.h;
// PermissionDenied otherwise); the multiplexer tells the gate who each connection's
// certificate names before any message of that connection (TellGatePeerIdentity). The
// coordinator's internal messages are never accepted from another node, authenticated or not.
// Senders in this process pass. A node stays admitted while an actor it authenticated from
// lives (an agent, a CLI session; their proxies here die with the connection).
//
//   node: UNKNOWN --AuthenticateRequest(token ok)--> ADMITTED --its authenticating actor down-->
//   UNKNOWN
//                 \--wrong token--> UNKNOWN (Unauthenticated, logged once a second at most)
#pragma once

#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "muster/messages/vocabulary/interfaces.h"
#include "muster/net/transport/tls/certificate_identity.h"

namespace muster {

class LeaderMetrics;

struct GateConfig {
  // Non-empty: the job token every other node presents first.
  std::string token;
  // The job's CA binds tasks to certificates (CaBindsTasks).
  bool bind_tasks = false;
  // Counts what the gate refuses, by reason (null: nothing counted).
  std::shared_ptr<LeaderMetrics> metrics;
};

// Returns the gate as a CoordinatorActor handle, ready to publish. `config` asks for a token, or
// binds tasks, or both.
CoordinatorActor SpawnTokenGate(caf::actor_system& system, CoordinatorActor coordinator,
                                GateConfig config);

// Tells `gate` that a connection of `node` whose certificate names `identity` is up
// (`connected`) or gone. Safe from any thread; only this message, sent as the gate itself,
// changes what the gate knows of certificates.
void TellGatePeerIdentity(const CoordinatorActor& gate, const caf::node_id& node,
                          const CertificateIdentity& identity, bool connected);

// Compares in time that depends only on the lengths, never on where the bytes differ.
bool TokensEqual(const std::string& presented, const std::string& expected);

}  // namespace muster
