#include "muster/net/agent/leader_connector_actor.h"

#include <algorithm>
#include <random>
#include <set>

#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <caf/io/middleman.hpp>

#include "muster/messages/status_codec.h"

namespace muster {
namespace {

struct ConnectorState {
  static inline const char* name = "muster.leader_connector";
  ConnectOptions options;
  caf::typed_response_promise<CoordinatorActor> promise;
  caf::actor_clock::time_point deadline;
  caf::timespan backoff{0};
  int attempts = 0;
  std::string last_error = "no attempt made";
  // An attempt ended with the leader closing the connection before CAF's handshake. Sticky: the
  // last attempt may instead be one the overall deadline cut short.
  bool refused_at_handshake = false;
  std::minstd_rand jitter{std::random_device{}()};
};

using ConnectorPointer = LeaderConnectorActor::stateful_pointer<ConnectorState>;

std::string Address(const ConnectOptions& options) {
  return absl::StrCat(options.host, ":", options.port);
}

caf::timespan TimeLeft(ConnectorPointer self) {
  return std::chrono::duration_cast<caf::timespan>(self->state.deadline - self->clock().now());
}

void Fail(ConnectorPointer self) {
  auto& st = self->state;
  // A leader that closes the connection before CAF's handshake is one that refused this node at
  // the transport: TLS on one side only, or certificates of different CAs.
  const bool refused = st.refused_at_handshake;
  st.promise.deliver(ToError(absl::DeadlineExceededError(absl::StrCat(
      "could not reach the Muster leader at ", Address(st.options), " within ",
      std::chrono::duration_cast<std::chrono::milliseconds>(st.options.timeout).count(), " ms (",
      st.attempts, " attempts); last error: ", st.last_error,
      refused ? ". The leader closed every connection before its handshake: check that both "
                "sides use TLS (or neither) with certificates of the same CA, and the limits of "
                "muster serve; the leader logs why it refused"
              : ". Is the leader running, and is the address right?"))));
  self->quit();
}

void ScheduleRetry(ConnectorPointer self, std::string error) {
  auto& st = self->state;
  st.last_error = std::move(error);
  if (absl::StrContains(st.last_error, "disconnect_during_handshake")) {
    st.refused_at_handshake = true;
  }
  caf::timespan left = TimeLeft(self);
  if (left <= caf::timespan{0}) return Fail(self);
  std::uniform_real_distribution<double> factor(0.5, 1.5);
  auto delay = std::chrono::duration_cast<caf::timespan>(st.backoff * factor(st.jitter));
  delay = std::min({delay, st.options.max_backoff, left});
  st.backoff = std::min(st.backoff * 2, st.options.max_backoff);
  self->delayed_send(self, delay, retry_atom::value);
}

void Attempt(ConnectorPointer self) {
  auto& st = self->state;
  caf::timespan left = TimeLeft(self);
  if (left <= caf::timespan{0}) return Fail(self);
  ++st.attempts;
  caf::timespan timeout = std::min(st.options.attempt_timeout, left);
  self->request(self->system().middleman().actor_handle(), timeout, caf::connect_atom::value,
                st.options.host, st.options.port)
      .then(
          [=](const caf::node_id&, caf::strong_actor_ptr& leader, const std::set<std::string>&) {
            if (!leader) return ScheduleRetry(self, "nothing is published on that port");
            self->state.promise.deliver(caf::actor_cast<CoordinatorActor>(std::move(leader)));
            self->quit();
          },
          [=](caf::error& error) { ScheduleRetry(self, self->system().render(error)); });
}

LeaderConnectorActor::behavior_type ConnectorBehavior(ConnectorPointer self,
                                                      ConnectOptions options) {
  self->state.options = std::move(options);
  self->state.backoff = self->state.options.initial_backoff;
  return {
      [=](caf::connect_atom) -> caf::result<CoordinatorActor> {
        auto& st = self->state;
        if (st.promise.pending()) {
          return ToError(absl::FailedPreconditionError("a connect attempt is already under way"));
        }
        st.promise = self->make_response_promise<CoordinatorActor>();
        st.deadline = self->clock().now() + st.options.timeout;
        Attempt(self);
        return st.promise;
      },
      [=](retry_atom) { Attempt(self); },
  };
}

}  // namespace

LeaderConnectorActor SpawnLeaderConnector(caf::actor_system& system, ConnectOptions options) {
  return system.spawn(ConnectorBehavior, std::move(options));
}

}  // namespace muster
