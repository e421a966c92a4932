#include "muster/net/agent/connect/leader_connector_actor.h"

#include <algorithm>
#include <memory>
#include <random>
#include <set>

#include <absl/strings/str_cat.h>
#include <caf/io/middleman.hpp>
#include <caf/sec.hpp>

#include "muster/messages/status/caf_text.h"
#include "muster/messages/status/status_codec.h"
#include "muster/net/agent/connect/connect_probe.h"
#include "muster/net/transport/wire/guarded_stream.h"

namespace muster {
namespace {

// How long a probe may take to learn why CAF could not connect, and how often it is asked.
constexpr caf::timespan kFirstProbeCheck = std::chrono::milliseconds(1);
constexpr caf::timespan kMaxProbeCheck = std::chrono::milliseconds(50);

struct ConnectorState {
  static inline const char* name = "muster.leader_connector";
  ConnectOptions options;
  caf::typed_response_promise<CoordinatorActor> promise;
  caf::actor_addr requester;  // of the connect request; the connector quits when it is gone
  caf::actor_clock::time_point deadline;
  caf::timespan backoff{0};
  int attempts = 0;
  int refused = 0;  // attempts that found nothing listening
  // Whether the leader closed a connection before CAF's handshake (sticky: the last attempt may
  // be one the deadline cut short), and the count of this process's rejected outbound TLS
  // handshakes when the current attempt started.
  bool refused_at_handshake = false;
  uint64_t tls_rejections = 0;
  std::string last_error = "no attempt made";
  // Why CAF's last attempt could not connect, while it is being found out.
  std::unique_ptr<ConnectProbe> probe;
  std::string probe_error;  // CAF's text of that attempt
  caf::actor_clock::time_point probe_deadline;
  caf::timespan probe_check{0};
  std::minstd_rand jitter{std::random_device{}()};
};

using ConnectorPointer = LeaderConnectorActor::stateful_pointer<ConnectorState>;

std::string Address(const ConnectOptions& options) {
  return absl::StrCat(options.host, ":", options.port);
}

std::string NothingListening(const ConnectOptions& options) {
  return absl::StrCat("nothing listening at ", Address(options), " (connection refused)");
}

caf::timespan TimeLeft(ConnectorPointer self) {
  return std::chrono::duration_cast<caf::timespan>(self->state.deadline - self->clock().now());
}

// What to check when the leader closed connections before CAF's handshake.
constexpr char kTransportRefusalHint[] =
    "check that both sides use TLS (or neither) with certificates of the same CA, and the limits "
    "of muster serve; the leader logs why it refused";

// Answers whoever asked (the leader, or why not) and ends the connector.
template <class Answer>
void Deliver(ConnectorPointer self, Answer answer) {
  self->state.promise.deliver(std::move(answer));
  self->quit();
}

void Fail(ConnectorPointer self) {
  auto& st = self->state;
  const std::string address = Address(st.options);
  std::string attempts = absl::StrCat(st.attempts, " attempts");
  if (st.refused > 0 && st.refused == st.attempts) {
    absl::StrAppend(&attempts, "): ", NothingListening(st.options));
  } else if (st.refused > 0) {
    absl::StrAppend(&attempts, ", ", st.refused, " of them finding nothing listening at ", address,
                    "); last error: ", st.last_error);
  } else {
    absl::StrAppend(&attempts, "); last error: ", st.last_error);
  }
  Deliver(self,
          ToError(absl::DeadlineExceededError(absl::StrCat(
              "could not reach the Muster leader at ", address, " within ",
              std::chrono::duration_cast<std::chrono::milliseconds>(st.options.timeout).count(),
              " ms (", attempts,
              st.refused_at_handshake
                  ? absl::StrCat(". The leader closed connections before its handshake: ",
                                 kTransportRefusalHint)
                  : ". Is the leader running, and is the address (host and port) the one "
                    "its ready line printed?"))));
}

// Nothing listens at the address: no leader (yet), or the wrong address.
void FailRefused(ConnectorPointer self) {
  Deliver(self, ToError(absl::UnavailableError(absl::StrCat(
                    NothingListening(self->state.options),
                    ": is the Muster leader running, and is the address (host and port) the one "
                    "its ready line printed? To wait for a leader that is still starting, use "
                    "wait_for_leader (muster: --wait-for-leader)"))));
}

// The leader closed the connection before CAF's handshake: it refused this node at the
// transport (TLS on one side only, certificates of different CAs, its limits).
void FailHandshake(ConnectorPointer self, const std::string& error) {
  Deliver(self, ToError(absl::UnavailableError(
                    absl::StrCat("the Muster leader at ", Address(self->state.options),
                                 " closed the connection before its handshake (", error,
                                 "): ", kTransportRefusalHint))));
}

void ScheduleRetry(ConnectorPointer self, std::string error) {
  auto& st = self->state;
  st.last_error = std::move(error);
  caf::timespan left = TimeLeft(self);
  if (left <= caf::timespan{0}) return Fail(self);
  std::uniform_real_distribution<double> factor(0.5, 1.5);
  auto delay = std::chrono::duration_cast<caf::timespan>(st.backoff * factor(st.jitter));
  delay = std::min({delay, st.options.max_backoff, left});
  st.backoff = std::min(st.backoff * 2, st.options.max_backoff);
  self->delayed_send(self, delay, retry_atom::value);
}

// Asks the probe how its connection went, and acts on it once it knows.
void CheckProbe(ConnectorPointer self) {
  auto& st = self->state;
  if (!st.probe) return;
  ConnectProbe::Outcome outcome = st.probe->Check();
  if (outcome == ConnectProbe::Outcome::kPending) {
    if (self->clock().now() < st.probe_deadline) {
      self->delayed_send(self, st.probe_check, caf::tick_atom::value);
      st.probe_check = std::min(st.probe_check * 2, kMaxProbeCheck);
      return;
    }
    st.probe.reset();  // no answer in time either: a host that drops the connection
    return ScheduleRetry(self, std::move(st.probe_error));
  }
  std::string detail = st.probe->detail();
  st.probe.reset();
  switch (outcome) {
    case ConnectProbe::Outcome::kRefused:
      ++st.refused;
      if (!st.options.wait_for_leader) return FailRefused(self);
      return ScheduleRetry(self, NothingListening(st.options));
    case ConnectProbe::Outcome::kReached:  // something listens now: the leader came up
      return ScheduleRetry(self, std::move(st.probe_error));
    default:
      return ScheduleRetry(self, detail.empty() ? std::move(st.probe_error)
                                                : absl::StrCat(st.probe_error, " (", detail, ")"));
  }
}

void OnAttemptFailed(ConnectorPointer self, const caf::error& error) {
  auto& st = self->state;
  std::string text = DescribeCafError(error);
  if (error == caf::sec::disconnect_during_handshake) {
    // This node's own TLS handshake failed on TLS itself (another CA, a plain leader): that
    // never heals. A leader that only closed the connection may have been out of descriptors or
    // over its connections per host: a caller that waits for its leader tries again.
    const bool tls_rejected = OutboundTlsRejections(st.options.port) != st.tls_rejections;
    if (tls_rejected || !st.options.wait_for_leader) return FailHandshake(self, text);
    st.refused_at_handshake = true;
    return ScheduleRetry(self, std::move(text));
  }
  if (error != caf::sec::cannot_connect_to_node) return ScheduleRetry(self, std::move(text));
  // The middleman's connect tried the host's first address (and IPv4 after IPv6, DialTcp), and
  // its text does not reach us (DescribeCafError keeps the code): a probe of every address tells
  // whether nothing listens at all.
  st.probe = std::make_unique<ConnectProbe>(st.options.host, st.options.port);
  st.probe_error = std::move(text);
  st.probe_deadline = self->clock().now() + std::min(st.options.attempt_timeout,
                                                     std::max(TimeLeft(self), caf::timespan{0}));
  st.probe_check = kFirstProbeCheck;
  CheckProbe(self);
}

void Attempt(ConnectorPointer self) {
  auto& st = self->state;
  caf::timespan left = TimeLeft(self);
  if (left <= caf::timespan{0}) return Fail(self);
  ++st.attempts;
  st.tls_rejections = OutboundTlsRejections(st.options.port);
  caf::timespan timeout = std::min(st.options.attempt_timeout, left);
  self->request(self->system().middleman().actor_handle(), timeout, caf::connect_atom::value,
                st.options.host, st.options.port)
      .then(
          [=](const caf::node_id&, caf::strong_actor_ptr& leader, const std::set<std::string>&) {
            if (!leader) return ScheduleRetry(self, "nothing is published on that port");
            Deliver(self, caf::actor_cast<CoordinatorActor>(std::move(leader)));
          },
          [=](caf::error& error) { OnAttemptFailed(self, error); });
}

LeaderConnectorActor::behavior_type ConnectorBehavior(ConnectorPointer self,
                                                      ConnectOptions options) {
  self->state.options = std::move(options);
  self->state.backoff = self->state.options.initial_backoff;
  // Whoever asked is gone (an agent destroyed, a process ending): nobody waits for the leader
  // any more, and a connector left retrying would hold its actor system open until its deadline.
  self->set_down_handler([=](caf::down_msg& down) {
    if (down.source == self->state.requester) self->quit();
  });
  return {
      [=](caf::connect_atom) -> caf::result<CoordinatorActor> {
        auto& st = self->state;
        if (st.promise.pending()) {
          return ToError(absl::FailedPreconditionError("a connect attempt is already under way"));
        }
        if (auto requester = self->current_sender()) {  // before the promise takes it
          st.requester = requester->address();
          self->monitor(requester);
        }
        st.promise = self->make_response_promise<CoordinatorActor>();
        st.deadline = self->clock().now() + st.options.timeout;
        Attempt(self);
        return st.promise;
      },
      [=](retry_atom) { Attempt(self); },
      [=](caf::tick_atom) { CheckProbe(self); },
  };
}

}  // namespace

LeaderConnectorActor SpawnLeaderConnector(caf::actor_system& system, ConnectOptions options) {
  return system.spawn(ConnectorBehavior, std::move(options));
}

}  // namespace muster
