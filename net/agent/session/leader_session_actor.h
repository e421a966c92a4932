// The leader session actor: the one way a worker-side process reaches an authenticated leader.
// It connects through the leader connector (its retries, backoff and TLS handling unchanged),
// presents the job token as itself, and answers with the leader's handle. It then stays
// RUNNING while both the leader and its requester live: the leader admits this node while the
// actor that presented the token lives (net/leader/auth/token_gate_actor.h), so the session is what
// keeps the node admitted. The agent, the muster command (and so `muster run`) and the
// benchmarks open their leader this way; the agent registers its task itself once the session
// answered (agent_actor.cc). Decisions are LeaderSessionMachine's; one behaviour per state.
//
//   (connect_atom) --> CONNECTING --leader found--> AUTHENTICATING --token accepted--> RUNNING
//                         |        (no token: RUNNING at once;         |                  |
//                         |         a leader given: starts here)       |  leader or       |
//                         +--connector failed--> STOPPED <--refused, --+  requester gone--+
//                                                (answers   timed out,
//                                                 the error) leader lost
//
// With an HA job's leaders (ConnectOptions::other_leaders) the session always presents the
// token (an empty one without a token), which is also how it learns whether the leader it
// reached is active: a standby's answer (net/leader/standby_leader.h) sends it on to the active
// leader it names, or to the next address; so does an address where nothing answers. It tries
// until ConnectOptions::timeout, pausing after each round of addresses that all failed. Given
// the job's registry too (ConnectOptions::registry, etcd://), it reads the leaders again after
// such a round (at most once a second, backing off to every 8 s; ha_registry_reader.h) and adds
// those it did not know.
#pragma once

#include <functional>
#include <string>

#include <absl/status/status.h>
#include <caf/actor_clock.hpp>
#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/duration.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/typed_actor.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/vocabulary/interfaces.h"
#include "muster/net/agent/connect/leader_connector_actor.h"
#include "muster/net/agent/session/leader_session_machine.h"

namespace muster {

struct LeaderSessionOptions {
  ConnectOptions connect;  // where the leader is, and how long to try
  // A leader reached already: the session starts at AUTHENTICATING (nothing to connect).
  CoordinatorActor leader;
  // The job token (empty: the session is RUNNING as soon as it has the leader).
  std::string token;
  // How long the leader may take to accept the token; with a `deadline`, until then instead.
  caf::timespan authenticate_timeout = std::chrono::seconds(30);
  caf::actor_clock::time_point deadline{};
};

// The session's answer (local only): the leader once RUNNING, else why it stopped and in which
// state (a connector's failure is final where a refused token may be retried).
struct LeaderSessionReply {
  CoordinatorActor leader;
  absl::Status status;
  SessionState failed_in = SessionState::kConnecting;
};

}  // namespace muster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(muster::LeaderSessionReply)

namespace muster {

// Request connect_atom once: the reply comes when the session is RUNNING or STOPPED. Asked
// again while RUNNING it answers with the same leader.
// (retry_atom is its own: the next leader of an HA job, after a pause.)
using LeaderSessionActor =
    caf::typed_actor<caf::replies_to<caf::connect_atom>::with<LeaderSessionReply>,
                     caf::reacts_to<retry_atom>>;

LeaderSessionActor SpawnLeaderSession(caf::actor_system& system, LeaderSessionOptions options);

// From an actor: opens a session for `self` and calls `done` with its reply in `self`'s turn.
// The session lives until its leader or `self` is gone (or it is sent an exit).
template <class Self>
LeaderSessionActor OpenLeaderSession(Self* self, LeaderSessionOptions options,
                                     std::function<void(LeaderSessionReply)> done) {
  LeaderSessionActor session = SpawnLeaderSession(self->system(), std::move(options));
  self->request(session, caf::infinite, caf::connect_atom::value)
      .then([done](LeaderSessionReply& reply) { done(std::move(reply)); },
            [done](caf::error& error) { done(LeaderSessionReply{.status = ToStatus(error)}); });
  return session;
}

// From a thread that is not an actor: opens a session for `self` and waits for its reply, at
// most `bound` (a DeadlineExceeded reply past it; the session is then stopped). The session
// lives until its leader or `self` is gone.
LeaderSessionReply OpenLeaderSession(caf::scoped_actor& self, LeaderSessionOptions options,
                                     caf::duration bound);
inline LeaderSessionReply OpenLeaderSession(caf::scoped_actor& self, LeaderSessionOptions options,
                                            caf::timespan bound) {
  return OpenLeaderSession(self, std::move(options), caf::duration{bound});
}

}  // namespace muster
