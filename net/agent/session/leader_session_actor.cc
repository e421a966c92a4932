#include "muster/net/agent/session/leader_session_actor.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <absl/strings/str_cat.h>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/net/agent/session/etcd/ha_registry_reader.h"
#include "muster/net/agent/session/leader_addresses.h"
#include "muster/net/leader/standby_leader.h"

namespace muster {
namespace {

struct SessionActorState {
  static inline const char* name = "muster.leader_session";
  LeaderSessionOptions options;
  LeaderSessionMachine machine;
  caf::typed_response_promise<LeaderSessionReply> promise;
  caf::actor_addr requester;  // the session ends when it is gone
  LeaderConnectorActor connector;
  CoordinatorActor leader;
  LeaderAddresses addresses;  // where the leader may be (several: an HA job's leaders)
  // With several: each try of an address has a number; the answers of an older try (a
  // connector, a token, a retry) are ignored once the session moved on.
  uint64_t attempt = 0;
  uint64_t retry_for = 0;                 // the try a pending retry_atom belongs to
  caf::actor_clock::time_point deadline;  // with several: until when to try them
  std::string last_error;                 // with several: why the last one was not it
  // With a registry: the job's leaders are read again after a round in which none took the
  // session, one read at a time, at most once per read_interval (1 s, doubling up to 8 s).
  bool reading = false;
  caf::actor_clock::time_point next_read{};
  caf::timespan read_interval = std::chrono::seconds(1);
};

using SessionPointer = LeaderSessionActor::stateful_pointer<SessionActorState>;

std::string Address(SessionPointer self) { return self->state.addresses.current(); }

// A pause between rounds of an HA job's leaders that all failed.
constexpr caf::timespan kRoundPause = std::chrono::milliseconds(100);

caf::result<LeaderSessionReply> Busy(SessionPointer self) {
  return ToError(absl::FailedPreconditionError(absl::StrCat(
      "the session with the leader is already ", SessionStateName(self->state.machine.state()))));
}

// One behaviour per state: what a connect_atom gets there (the work itself is the answers of
// the connector and of the leader).
void Connect(SessionPointer self);

LeaderSessionActor::behavior_type Connecting(SessionPointer self) {
  return {[self](caf::connect_atom) { return Busy(self); },
          [self](retry_atom) {
            if (self->state.retry_for == self->state.attempt && !self->state.connector) {
              Connect(self);
            }
          }};
}

LeaderSessionActor::behavior_type Authenticating(SessionPointer self) {
  return {[self](caf::connect_atom) { return Busy(self); }, [](retry_atom) {}};
}

LeaderSessionActor::behavior_type Running(SessionPointer self) {
  return {[self](caf::connect_atom) -> caf::result<LeaderSessionReply> {
            return LeaderSessionReply{.leader = self->state.leader};
          },
          [](retry_atom) {}};
}

// STOPPED: tells the requester why (unless it is gone) and ends the session.
void Stop(SessionPointer self, const absl::Status& status) {
  auto& st = self->state;
  SessionState failed_in = st.machine.state();
  st.machine.Stop();
  if (st.promise.pending()) {
    st.promise.deliver(LeaderSessionReply{.status = status, .failed_in = failed_in});
  }
  if (st.connector) self->send_exit(st.connector, caf::exit_reason::user_shutdown);
  self->quit();
}

void Run(SessionPointer self) {
  auto& st = self->state;
  st.addresses.Reached();
  self->become(Running(self));
  st.promise.deliver(LeaderSessionReply{.leader = st.leader});
}

// With a registry: the job's leaders read again (by a reader of this read alone: the read
// blocks), those not known added to the rounds after it.
void ReadRegistry(SessionPointer self) {
  auto& st = self->state;
  const auto now = self->clock().now();
  if (st.options.connect.registry.empty() || st.reading || now < st.next_read) return;
  st.reading = true;
  st.next_read = now + st.read_interval;
  st.read_interval = std::min(st.read_interval * 2, caf::timespan{std::chrono::seconds(8)});
  auto left = std::chrono::duration_cast<caf::timespan>(st.deadline - now);
  caf::timespan timeout =
      std::max(std::min(left, st.options.connect.attempt_timeout * 2), caf::timespan{1});
  // The reader bounds the read by `timeout` and quits after it.
  self->request(SpawnHaRegistryReader(self->system(), st.options.connect.registry_security),
                caf::infinite, caf::get_atom::value, st.options.connect.registry, timeout)
      .then(
          [self](std::string& leaders) {
            self->state.reading = false;
            for (const std::string& address : SplitLeaderList(leaders)) {
              self->state.addresses.Add(address);
            }
          },
          [self](caf::error&) { self->state.reading = false; });
}

// With an HA job's leaders: on to the next one (or to the active one a standby named), after a
// pause once every address failed (and the registry read again); STOPPED when the time is up.
void NextLeader(SessionPointer self, const absl::Status& why) {
  auto& st = self->state;
  st.last_error = std::string(why.message());
  if (self->clock().now() >= st.deadline) {
    return Stop(
        self, absl::DeadlineExceededError(absl::StrCat(
                  "found no active Muster leader among ", st.addresses.all(), " within ",
                  std::chrono::duration_cast<std::chrono::milliseconds>(st.options.connect.timeout)
                      .count(),
                  " ms; last, at ", Address(self), ": ", st.last_error)));
  }
  std::optional<std::string> active = StandbyActiveLeader(why);
  bool pause = false;
  if (active && !active->empty()) {
    pause = st.addresses.Follow(*active);
  } else {
    pause = st.addresses.Next();
  }
  if (st.leader) {
    self->demonitor(st.leader.address());
    st.leader = nullptr;
  }
  if (st.connector) {
    self->send_exit(st.connector, caf::exit_reason::user_shutdown);
    st.connector = nullptr;
  }
  ++st.attempt;  // what the last try still has under way is of no concern now
  st.machine.Redirected();
  self->become(Connecting(self));
  if (!pause) return Connect(self);
  ReadRegistry(self);
  st.retry_for = st.attempt;
  auto left = std::chrono::duration_cast<caf::timespan>(st.deadline - self->clock().now());
  self->delayed_send(self, std::max(std::min(kRoundPause, left), caf::timespan{0}),
                     retry_atom::value);
}

// The leader reached did not take the session: a standby (or a failure) sends a session with
// other leaders on to the next; a single leader's answer is final.
void NotThisLeader(SessionPointer self, const absl::Status& status) {
  if (self->state.addresses.several() &&
      (StandbyActiveLeader(status) || absl::IsUnavailable(status) ||
       absl::IsDeadlineExceeded(status))) {
    return NextLeader(self, status);
  }
  Stop(self, status);
}

void Authenticate(SessionPointer self) {
  auto& st = self->state;
  self->become(Authenticating(self));
  caf::timespan timeout = st.options.authenticate_timeout;
  if (st.options.deadline != caf::actor_clock::time_point{}) {
    timeout = std::max(
        std::chrono::duration_cast<caf::timespan>(st.options.deadline - self->clock().now()),
        caf::timespan{1});
  }
  if (st.addresses.several()) {
    // One leader that does not answer must not keep the session from the others.
    auto left = std::chrono::duration_cast<caf::timespan>(st.deadline - self->clock().now());
    timeout = std::max(std::min({timeout, left, st.options.connect.attempt_timeout * 2}),
                       caf::timespan{1});
  }
  proto::AuthenticateRequest auth;
  auth.set_token(st.options.token);
  const uint64_t attempt = st.attempt;
  self->request(st.leader, timeout, std::move(auth))
      .then(
          [self, attempt](proto::AuthenticateResponse&) {
            if (self->state.attempt != attempt) return;
            if (self->state.machine.Authenticated() == SessionState::kRunning) Run(self);
          },
          [self, attempt](caf::error& error) {
            if (self->state.attempt != attempt) return;
            NotThisLeader(self, ToStatus(error));
          });
}

// The leader is known: watch it, then present the token (or run at once without one).
void Adopt(SessionPointer self, CoordinatorActor leader) {
  auto& st = self->state;
  st.leader = std::move(leader);
  self->monitor(st.leader);
  if (st.machine.state() == SessionState::kAuthenticating) return Authenticate(self);
  Run(self);
}

void Connect(SessionPointer self) {
  auto& st = self->state;
  self->become(Connecting(self));
  ConnectOptions connect = st.options.connect;
  connect.host = st.addresses.host();
  connect.port = st.addresses.port();
  if (st.addresses.several()) {
    // One address may not take the whole time: another may be the active leader.
    auto left = std::chrono::duration_cast<caf::timespan>(st.deadline - self->clock().now());
    connect.timeout = std::max(std::min(left, connect.attempt_timeout * 2), caf::timespan{1});
    connect.wait_for_leader = false;
  }
  st.connector = SpawnLeaderConnector(self->system(), std::move(connect));
  const uint64_t attempt = st.attempt;
  self->request(st.connector, caf::infinite, caf::connect_atom::value)
      .then(
          [self, attempt](CoordinatorActor& leader) {
            if (self->state.attempt != attempt) return;
            self->state.connector = nullptr;
            self->state.machine.Connected();
            Adopt(self, std::move(leader));
          },
          [self, attempt](caf::error& error) {
            if (self->state.attempt != attempt) return;
            self->state.connector = nullptr;
            if (self->state.addresses.several()) return NextLeader(self, ToStatus(error));
            Stop(self, ToStatus(error));
          });
}

void OnDown(SessionPointer self, const caf::down_msg& down) {
  auto& st = self->state;
  if (down.source == st.requester) {
    return Stop(self, absl::CancelledError("the session's requester is gone"));
  }
  if (!st.leader || down.source != st.leader.address()) return;
  absl::Status lost = absl::UnavailableError(absl::StrCat(
      "lost the connection to the Muster leader at ", Address(self), " (",
      ToStatus(down.reason).message(), ") while ", SessionStateName(self->state.machine.state())));
  if (st.addresses.several() && st.machine.state() == SessionState::kAuthenticating) {
    return NextLeader(self, lost);
  }
  Stop(self, lost);
}

LeaderSessionActor::behavior_type Idle(SessionPointer self, LeaderSessionOptions options) {
  auto& st = self->state;
  st.options = std::move(options);
  st.addresses = LeaderAddresses(st.options.connect.host, st.options.connect.port,
                                 st.options.connect.other_leaders);
  // With an HA job's leaders the token (empty or not) also asks whether a leader is active.
  st.machine = LeaderSessionMachine(
      SessionPlan{.authenticate = !st.options.token.empty() || st.addresses.several()});
  self->set_down_handler([self](caf::down_msg& down) { OnDown(self, down); });
  return {[self](caf::connect_atom) -> caf::result<LeaderSessionReply> {
            auto& st = self->state;
            if (auto requester = self->current_sender()) {  // before the promise takes it
              st.requester = requester->address();
              self->monitor(requester);
            }
            st.promise = self->make_response_promise<LeaderSessionReply>();
            st.deadline = self->clock().now() + st.options.connect.timeout;
            CoordinatorActor known = std::move(st.options.leader);
            st.machine.Start(static_cast<bool>(known));
            if (known) {
              Adopt(self, std::move(known));
            } else {
              Connect(self);
            }
            return st.promise;
          },
          [](retry_atom) {}};
}

}  // namespace

LeaderSessionActor SpawnLeaderSession(caf::actor_system& system, LeaderSessionOptions options) {
  return system.spawn(Idle, std::move(options));
}

LeaderSessionReply OpenLeaderSession(caf::scoped_actor& self, LeaderSessionOptions options,
                                     caf::duration bound) {
  LeaderSessionActor session = SpawnLeaderSession(self->system(), std::move(options));
  LeaderSessionReply result{.status = absl::InternalError("no reply from the leader session")};
  self->request(session, bound, caf::connect_atom::value)
      .receive([&](LeaderSessionReply& reply) { result = std::move(reply); },
               [&](caf::error& error) {
                 result.status = ToStatus(error);
                 caf::anon_send_exit(session, caf::exit_reason::user_shutdown);
               });
  return result;
}

}  // namespace muster
