#include "muster/net/agent/session/leader_session_machine.h"

#include <algorithm>

namespace muster {

const char* SessionStateName(SessionState state) {
  switch (state) {
    case SessionState::kConnecting:
      return "CONNECTING";
    case SessionState::kAuthenticating:
      return "AUTHENTICATING";
    case SessionState::kRegistering:
      return "REGISTERING";
    case SessionState::kRunning:
      return "RUNNING";
    case SessionState::kReconnecting:
      return "RECONNECTING";
    case SessionState::kStopped:
      return "STOPPED";
  }
  return "UNKNOWN";
}

SessionState LeaderSessionMachine::AfterConnect() {
  if (plan_.authenticate && !authenticated_) return SessionState::kAuthenticating;
  return AfterAuthenticate();
}

SessionState LeaderSessionMachine::AfterAuthenticate() {
  if (plan_.register_task) return SessionState::kRegistering;
  reconnecting_ = false;
  return SessionState::kRunning;
}

SessionState LeaderSessionMachine::Start(bool leader_known) {
  authenticated_ = false;
  state_ = leader_known ? AfterConnect() : SessionState::kConnecting;
  return state_;
}

SessionState LeaderSessionMachine::Connected() {
  if (state_ == SessionState::kConnecting || state_ == SessionState::kReconnecting) {
    authenticated_ = false;  // a new connection proves the token again
    state_ = AfterConnect();
  }
  return state_;
}

SessionState LeaderSessionMachine::Authenticated() {
  if (state_ == SessionState::kAuthenticating) {
    authenticated_ = true;
    state_ = AfterAuthenticate();
  }
  return state_;
}

SessionState LeaderSessionMachine::Redirected() {
  if (state_ == SessionState::kAuthenticating) {
    authenticated_ = false;
    state_ = reconnecting_ ? SessionState::kReconnecting : SessionState::kConnecting;
  }
  return state_;
}

SessionState LeaderSessionMachine::Registered() {
  if (state_ == SessionState::kRegistering) {
    reconnecting_ = false;
    state_ = SessionState::kRunning;
  }
  return state_;
}

SessionState LeaderSessionMachine::LeaderLost() {
  authenticated_ = false;
  if (state_ == SessionState::kStopped) return state_;
  if (plan_.reconnect && (state_ == SessionState::kRunning || reconnecting_)) {
    reconnecting_ = true;
    state_ = SessionState::kReconnecting;
  } else {
    state_ = SessionState::kStopped;
  }
  return state_;
}

SessionState LeaderSessionMachine::Stop() {
  reconnecting_ = false;
  authenticated_ = false;
  state_ = SessionState::kStopped;
  return state_;
}

Backoff::Duration Backoff::Next(Duration left) {
  Duration delay = std::min(next_, left);
  next_ = std::min(next_ * 2, max_);
  return delay;
}

}  // namespace muster
