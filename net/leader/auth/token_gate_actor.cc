#include "muster/net/leader/auth/token_gate_actor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <absl/container/flat_hash_map.h>
#include <absl/strings/str_cat.h>
#include <caf/event_based_actor.hpp>
#include <caf/message_view.hpp>
#include <caf/stateful_actor.hpp>

#include "muster/actors/caf/hardening.h"
#include "muster/actors/caf/placement.h"
#include "muster/actors/observe/leader_metrics.h"
#include "muster/messages/status/caf_text.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/vocabulary/atoms.h"
#include "muster/net/leader/auth/peer_identities.h"

namespace muster {
namespace {

using peer_identity_atom = caf::atom_constant<caf::atom("peerident")>;

struct GateState {
  static inline const char* name = "muster.token_gate";
  CoordinatorActor coordinator;
  std::string token;
  bool bind_tasks = false;
  PeerIdentities identities;
  std::shared_ptr<LeaderMetrics> metrics;  // null: nothing counted
  // Admitted nodes, and how many of their actors authenticated (each is monitored).
  absl::flat_hash_map<caf::node_id, int> admitted;
  caf::actor_clock::time_point last_log{};
};

using GatePointer = caf::stateful_actor<GateState>*;

void Count(GatePointer self, Refusal why) {
  if (self->state.metrics) self->state.metrics->Refused(why);
}

absl::Status NotAdmitted(const std::string& peer) {
  return absl::UnauthenticatedError(absl::StrCat(
      "the Muster leader requires the job token and ", peer,
      " has not presented it; give it the file of the leader's --token-file: "
      "MUSTER_TOKEN_FILE=FILE in the environment of workers and the CLI, or --token-file FILE "
      "on muster status, kv, task and run (Python: Agent(token=...))"));
}

// At most one line a second; `line()` builds it only then (a flood of refused messages costs no
// text).
template <class Line>
void LogRefusal(GatePointer self, Line line) {
  auto now = self->clock().now();  // the actor clock: simulated in tests
  if (now - self->state.last_log < std::chrono::seconds(1)) return;
  self->state.last_log = now;
  std::fprintf(stderr, "muster: %s\n", line().c_str());
}

// Only requests cross the gate: the coordinator's internal atoms (barrier_done, task_state)
// never come from another node. cancel_atom withdraws an agent's own gets.
bool IsRequest(caf::message_view& view) {
  const caf::type_erased_tuple& content = view.content();
  if (content.size() == 0) return false;
  if (content.type(0).first != caf::type_nr<caf::atom_value>::value) return true;
  return content.get_as<caf::atom_value>(0) == cancel_atom::value;
}

caf::result<proto::AuthenticateResponse> Authenticate(GatePointer self,
                                                      const proto::AuthenticateRequest& request) {
  const caf::strong_actor_ptr& sender = self->current_sender();
  if (!sender) return ToError(absl::UnauthenticatedError("an anonymous AuthenticateRequest"));
  // A gate for certificates only asks no token: any is accepted, as by the coordinator.
  if (self->state.token.empty()) return proto::AuthenticateResponse();
  if (!TokensEqual(request.token(), self->state.token)) {
    Count(self, Refusal::kWrongToken);
    LogRefusal(self, [&] {
      return absl::StrCat("refused ", PeerName(sender->node()), ": wrong job token");
    });
    return ToError(absl::UnauthenticatedError(
        "wrong job token: the Muster leader was started with another one"));
  }
  if (sender->node() != self->node()) {
    ++self->state.admitted[sender->node()];
    self->monitor(sender);
  }
  return proto::AuthenticateResponse();
}

caf::result<caf::message> Pass(GatePointer self, caf::message_view& view) {
  const caf::strong_actor_ptr& sender = self->current_sender();
  if (!FromThisNode(self)) {
    const bool admitted = sender && self->state.admitted.contains(sender->node());
    if (!admitted && !self->state.token.empty()) {
      const std::string peer = PeerName(sender ? sender->node() : caf::node_id{});
      Count(self, Refusal::kUnauthenticated);
      LogRefusal(self, [&] {
        return absl::StrCat("refused a request from ", peer, ": no job token presented");
      });
      return ToError(NotAdmitted(peer));
    }
    if (!IsRequest(view)) {
      Count(self, Refusal::kInternalMessage);
      return ToError(absl::PermissionDeniedError(
          "internal coordinator messages are not accepted from other nodes"));
    }
    if (self->state.bind_tasks) {
      const std::string peer = PeerName(sender ? sender->node() : caf::node_id{});
      absl::Status allowed = self->state.identities.MaySend(
          sender ? sender->node() : caf::node_id{}, peer, view.content());
      if (!allowed.ok()) {
        Count(self, Refusal::kPermissionDenied);
        LogRefusal(self, [&] { return absl::StrCat("refused ", allowed.message()); });
        return ToError(allowed);
      }
    }
  }
  auto promise = self->make_response_promise();
  promise.delegate(caf::actor_cast<caf::actor>(self->state.coordinator),
                   view.move_content_to_message());
  return caf::delegated<caf::message>{};
}

// Only the gate itself sends this (TellGatePeerIdentity): no other sender can claim a
// certificate.
void OnPeerIdentity(GatePointer self, const caf::node_id& node, int32_t kind,
                    const std::string& name, bool connected) {
  if (self->current_sender() != self->ctrl()) return;
  if (kind < 0 || kind > static_cast<int32_t>(CertificateIdentity::Kind::kUnknown)) return;
  CertificateIdentity identity{static_cast<CertificateIdentity::Kind>(kind), name};
  if (connected) {
    self->state.identities.Connected(node, identity);
  } else {
    self->state.identities.Disconnected(node, identity);
  }
}

caf::behavior GateBehavior(GatePointer self, CoordinatorActor coordinator, GateConfig config) {
  HostOnNetworkThread(self);
  DropErrorMessages(self);
  self->state.coordinator = std::move(coordinator);
  self->state.token = std::move(config.token);
  self->state.bind_tasks = config.bind_tasks;
  self->state.metrics = std::move(config.metrics);
  self->link_to(self->state.coordinator);  // the gate lives and dies with its coordinator
  self->set_down_handler([self](caf::down_msg& down) {
    auto it = self->state.admitted.find(down.source.node());
    if (it != self->state.admitted.end() && --it->second <= 0) self->state.admitted.erase(it);
  });
  // What the gate does not handle itself goes to the coordinator, which drops and counts what
  // it does not handle either (DropUnexpectedMessages).
  self->set_default_handler(
      [self](caf::scheduled_actor*, caf::message_view& view) { return Pass(self, view); });
  return {
      [self](const proto::AuthenticateRequest& request) { return Authenticate(self, request); },
      [self](peer_identity_atom, const caf::node_id& node, int32_t kind, const std::string& name,
             bool connected) { OnPeerIdentity(self, node, kind, name, connected); },
  };
}

}  // namespace

bool TokensEqual(const std::string& presented, const std::string& expected) {
  const size_t n = std::max(presented.size(), expected.size());
  unsigned diff = presented.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    unsigned a = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    unsigned b = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0;
    diff |= a ^ b;
  }
  return diff == 0 && !expected.empty();
}

CoordinatorActor SpawnTokenGate(caf::actor_system& system, CoordinatorActor coordinator,
                                GateConfig config) {
  // Not lazily initialised: the link to the coordinator is made at once, so a gate that no
  // message ever reached still ends with it.
  caf::actor gate =
      system.spawn([](caf::stateful_actor<GateState>* self, CoordinatorActor c,
                      GateConfig g) { return GateBehavior(self, std::move(c), std::move(g)); },
                   std::move(coordinator), std::move(config));
  return caf::actor_cast<CoordinatorActor>(gate);
}

void TellGatePeerIdentity(const CoordinatorActor& gate, const caf::node_id& node,
                          const CertificateIdentity& identity, bool connected) {
  caf::actor target = caf::actor_cast<caf::actor>(gate);
  if (!target) return;
  caf::send_as(target, target, peer_identity_atom::value, node, static_cast<int32_t>(identity.kind),
               identity.name, connected);
}

}  // namespace muster
