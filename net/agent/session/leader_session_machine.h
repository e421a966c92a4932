// What a worker's session with its leader does next, without CAF: the states of the session, the
// event that moves it from one to the next, and when a failed step is tried again. The leader
// session actor (leader_session_actor.h) and the agent actor carry the steps out; this class
// only decides.
//
//   CONNECTING --leader found--> AUTHENTICATING --token accepted--> REGISTERING --registered-->
//       |      (no token to present: AUTHENTICATING is skipped;      (a session that registers
//       |       a session given its leader starts there)              no task: RUNNING at once)
//       |<--standby of an HA job: Redirected (to reach the active leader)--AUTHENTICATING
//       |                                                                          |
//       |            +---- leader lost, waiting for it allowed ----- RUNNING <-----+
//       |            v                                                  |
//       |      RECONNECTING --leader found--> AUTHENTICATING --> REGISTERING --> RUNNING
//       |            |
//       +------------+--failed for good (refused, deadline), leader lost, Stop--> STOPPED
//
// A failed step is tried again (Retry) when the failure may heal and time is left; the delay
// doubles from try to try up to a maximum (Backoff).
#pragma once

#include <chrono>

namespace muster {

enum class SessionState {
  kConnecting,
  kAuthenticating,
  kRegistering,
  kRunning,
  kReconnecting,
  kStopped,
};
const char* SessionStateName(SessionState state);

// What a session does besides connecting.
struct SessionPlan {
  bool authenticate = false;   // present a job token (a leader in another process, a token)
  bool register_task = false;  // register a task (an agent)
  bool reconnect = false;      // wait for a lost leader instead of stopping (a RUNNING agent)
};

class LeaderSessionMachine {
 public:
  explicit LeaderSessionMachine(SessionPlan plan = {}) : plan_(plan) {}

  SessionState state() const { return state_; }
  const SessionPlan& plan() const { return plan_; }
  // Waiting for a lost leader: from the loss until it is RUNNING again or STOPPED.
  bool reconnecting() const { return reconnecting_; }
  // The current leader accepted the job token (or none was needed).
  bool authenticated() const { return authenticated_; }

  // Starts (again) from CONNECTING, or, with the leader known already, from the step after it.
  SessionState Start(bool leader_known = false);
  // The connector found the leader.
  SessionState Connected();
  // The leader accepted the token.
  SessionState Authenticated();
  // The leader reached is not the one to use (a standby of an HA job): back to CONNECTING (or
  // RECONNECTING), to reach another.
  SessionState Redirected();
  // The leader registered the task.
  SessionState Registered();
  // The leader's connection (or process) is gone: RECONNECTING when the plan allows it and the
  // session was RUNNING (or already reconnecting), else STOPPED.
  SessionState LeaderLost();
  // A step failed for good, or the session is ended.
  SessionState Stop();

 private:
  // The step after the leader was found, or after the token was accepted.
  SessionState AfterConnect();
  SessionState AfterAuthenticate();

  SessionPlan plan_;
  SessionState state_ = SessionState::kConnecting;
  bool reconnecting_ = false;
  bool authenticated_ = false;
};

// The delays between tries: `first`, then doubled each time, never above `max`, never past the
// time left.
class Backoff {
 public:
  using Duration = std::chrono::nanoseconds;
  Backoff(Duration first, Duration max) : next_(first), max_(max) {}
  // The delay before the next try (at most `left`); the one after it doubles.
  Duration Next(Duration left);

 private:
  Duration next_;
  Duration max_;
};

// Whether a failed step is tried again: when the failure may heal (`retryable`) and time is
// left before the deadline.
inline bool ShouldRetry(bool retryable, std::chrono::nanoseconds left) {
  return retryable && left > std::chrono::nanoseconds{0};
}

}  // namespace muster
