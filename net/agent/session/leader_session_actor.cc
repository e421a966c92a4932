#include "muster/net/agent/session/leader_session_actor.h"

#include <algorithm>
#include <utility>

#include <absl/strings/str_cat.h>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "muster/messages/status/status_codec.h"

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
};

using SessionPointer = LeaderSessionActor::stateful_pointer<SessionActorState>;

std::string Address(SessionPointer self) {
  return absl::StrCat(self->state.options.connect.host, ":", self->state.options.connect.port);
}

caf::result<LeaderSessionReply> Busy(SessionPointer self) {
  return ToError(absl::FailedPreconditionError(absl::StrCat(
      "the session with the leader is already ", SessionStateName(self->state.machine.state()))));
}

// One behaviour per state: what a connect_atom gets there (the work itself is the answers of
// the connector and of the leader).
LeaderSessionActor::behavior_type Connecting(SessionPointer self) {
  return {[self](caf::connect_atom) { return Busy(self); }};
}

LeaderSessionActor::behavior_type Authenticating(SessionPointer self) {
  return {[self](caf::connect_atom) { return Busy(self); }};
}

LeaderSessionActor::behavior_type Running(SessionPointer self) {
  return {[self](caf::connect_atom) -> caf::result<LeaderSessionReply> {
    return LeaderSessionReply{.leader = self->state.leader};
  }};
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
  self->become(Running(self));
  st.promise.deliver(LeaderSessionReply{.leader = st.leader});
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
  proto::AuthenticateRequest auth;
  auth.set_token(st.options.token);
  self->request(st.leader, timeout, std::move(auth))
      .then(
          [self](proto::AuthenticateResponse&) {
            if (self->state.machine.Authenticated() == SessionState::kRunning) Run(self);
          },
          [self](caf::error& error) { Stop(self, ToStatus(error)); });
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
  st.connector = SpawnLeaderConnector(self->system(), st.options.connect);
  self->request(st.connector, caf::infinite, caf::connect_atom::value)
      .then(
          [self](CoordinatorActor& leader) {
            self->state.connector = nullptr;
            self->state.machine.Connected();
            Adopt(self, std::move(leader));
          },
          [self](caf::error& error) {
            self->state.connector = nullptr;
            Stop(self, ToStatus(error));
          });
}

void OnDown(SessionPointer self, const caf::down_msg& down) {
  auto& st = self->state;
  if (down.source == st.requester) {
    return Stop(self, absl::CancelledError("the session's requester is gone"));
  }
  if (!st.leader || down.source != st.leader.address()) return;
  Stop(self, absl::UnavailableError(absl::StrCat("lost the connection to the Muster leader at ",
                                                 Address(self), " (",
                                                 ToStatus(down.reason).message(), ") while ",
                                                 SessionStateName(self->state.machine.state()))));
}

LeaderSessionActor::behavior_type Idle(SessionPointer self, LeaderSessionOptions options) {
  auto& st = self->state;
  st.options = std::move(options);
  st.machine = LeaderSessionMachine(SessionPlan{.authenticate = !st.options.token.empty()});
  self->set_down_handler([self](caf::down_msg& down) { OnDown(self, down); });
  return {[self](caf::connect_atom) -> caf::result<LeaderSessionReply> {
    auto& st = self->state;
    if (auto requester = self->current_sender()) {  // before the promise takes it
      st.requester = requester->address();
      self->monitor(requester);
    }
    st.promise = self->make_response_promise<LeaderSessionReply>();
    CoordinatorActor known = std::move(st.options.leader);
    st.machine.Start(static_cast<bool>(known));
    if (known) {
      Adopt(self, std::move(known));
    } else {
      Connect(self);
    }
    return st.promise;
  }};
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
