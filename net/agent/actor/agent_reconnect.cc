// The agent waits for a lost leader (AgentConfig::leader_reconnect_timeout): a RUNNING agent
// keeps its calls, connects again (a leader session, or the reconnect_local_leader seam),
// presents its job token, and registers again with the same incarnation
// (RegisterTaskRequest.reconnect). When the leader answers with the leader incarnation the
// agent had (it restarted from its state dir), the agent re-sends every pending call in the
// order they were made, resumes its watches from the last revision delivered and restarts
// heartbeats. A refused register, another leader incarnation or the deadline fail every call
// with Unavailable and put the agent in ERROR.
//
//   RUNNING --leader lost--> CONNECT --> [AUTHENTICATE] --> REGISTER --same leader--> RUNNING
//                              ^  | no leader yet, transport error, leader lost again
//                              +--+ (after a backoff)
//   any step --deadline passed, refused, other leader incarnation--> ERROR (calls Unavailable)
// CONNECT and AUTHENTICATE are a leader session's (net/agent/session/leader_session_actor.h).
#include <algorithm>
#include <vector>

#include <absl/strings/str_cat.h>
#include <absl/time/time.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/actor/agent_state.h"

namespace muster {
namespace {

std::string LeaderName(AgentPointer self) {
  if (self->state.config.local_leader) return "the in-process Muster leader";
  return absl::StrCat("the Muster leader at ", LeaderAddress(self));
}

std::string TimeoutText(AgentPointer self) {
  return absl::StrCat(
      absl::FormatDuration(absl::FromChrono(self->state.config.leader_reconnect_timeout)),
      " (leader_reconnect_timeout)");
}

caf::timespan TimeLeft(AgentPointer self) {
  return std::chrono::duration_cast<caf::timespan>(self->state.reconnect_deadline -
                                                   self->clock().now());
}

// Whether an answer of try `attempt` still counts.
bool Current(AgentPointer self, uint64_t attempt) {
  return Reconnecting(self) && attempt == self->state.reconnect_try;
}

// The reconnect failed for good: every call fails with `status`, and so does the agent.
void Fail(AgentPointer self, const absl::Status& status) {
  StopReconnecting(self);
  DropLeader(self);
  FailPending(self, status, /*blocking_only=*/false);
  SetError(self, status);
}

void Refused(AgentPointer self, const absl::Status& status) {
  auto& st = self->state;
  Fail(self, absl::UnavailableError(absl::StrCat(
                 LeaderName(self), " came back but refused to take back task ",
                 TaskName(st.config.task), " (incarnation ", st.config.incarnation,
                 "): ", StatusText(status), "; the task cannot coordinate any more: restart it")));
}

// A try failed in a way that another may not: try again after a backoff (the deadline timer
// ends the episode when no time is left).
void Retry(AgentPointer self, std::string error) {
  auto& st = self->state;
  st.reconnect_error = std::move(error);
  uint64_t attempt = ++st.reconnect_try;
  caf::timespan left = TimeLeft(self);
  if (left <= caf::timespan{0}) return;
  self->delayed_send(self, st.reconnect_backoff.Next(left), retry_atom::value, attempt);
}

// The leader is back with this task's state: everything goes on where it stopped.
void Resume(AgentPointer self) {
  auto& st = self->state;
  StopReconnecting(self);
  StartHeartbeats(self);
  std::vector<uint64_t> ids;
  ids.reserve(st.pending.size());
  for (const auto& [id, call] : st.pending) ids.push_back(id);
  for (uint64_t id : ids) {  // in the order the calls were made
    auto it = st.pending.find(id);
    if (it != st.pending.end() && it->second.send) it->second.send();
  }
  ResumeWatches(self);
}

void Register(AgentPointer self, uint64_t attempt) {
  auto& st = self->state;
  caf::timespan timeout = std::max(TimeLeft(self), caf::timespan{1});
  auto on_error = [self, attempt](const absl::Status& status) {
    if (!Current(self, attempt)) return;
    if (!Retryable(status)) return Refused(self, status);
    DropLeader(self);  // a new connection next time
    Retry(self, StatusText(status));
  };
  if (NeedsToken(self)) {  // a leader found through the reconnect_local_leader seam
    st.reconnect_session = OpenLeaderSession(
        self, {.leader = st.leader, .token = st.config.token, .deadline = st.reconnect_deadline},
        [self, attempt, on_error](LeaderSessionReply reply) {
          if (!Current(self, attempt)) return;
          self->state.reconnect_session = nullptr;
          if (!reply.status.ok()) return on_error(reply.status);
          self->state.authenticated = true;
          Register(self, attempt);
        });
    return;
  }
  proto::RegisterTaskRequest request;
  *request.mutable_source_task() = st.config.task;
  request.set_incarnation(st.config.incarnation);
  if (st.config.generation) request.set_generation(*st.config.generation);
  request.set_reconnect(true);
  self->request(st.leader, timeout, request, caf::actor_cast<AgentActor>(self))
      .then(
          [self, attempt](proto::RegisterTaskResponse& response) {
            auto& st = self->state;
            if (!Current(self, attempt)) return;
            if (response.leader_incarnation() == st.leader_incarnation) {
              // A leader restarted with another --heartbeat-timeout: the beats follow it.
              if (absl::Status refused = AdoptHeartbeatTimeout(self, response); !refused.ok()) {
                return Fail(self, refused);
              }
              st.direct_port = response.direct_port();
              return Resume(self);
            }
            Fail(self, absl::UnavailableError(absl::StrCat(
                           LeaderName(self), " came back without the state of task ",
                           TaskName(st.config.task), " (leader incarnation ",
                           response.leader_incarnation(), ", was ", st.leader_incarnation,
                           "): it was started afresh, not from its --state-dir; the task "
                           "cannot coordinate any more: restart it")));
          },
          [on_error](caf::error& error) { on_error(ToStatus(error)); });
}

// `authenticated`: the leader accepted the job token on this connection already.
void Adopt(AgentPointer self, CoordinatorActor leader, uint64_t attempt, bool authenticated) {
  AdoptLeader(self, std::move(leader), authenticated);
  Register(self, attempt);
}

void Try(AgentPointer self) {
  auto& st = self->state;
  uint64_t attempt = ++st.reconnect_try;
  if (st.config.reconnect_local_leader) {
    CoordinatorActor leader = st.config.reconnect_local_leader();
    if (!leader) return Retry(self, "no leader yet");
    if (st.config.local_leader) st.config.local_leader = leader;  // still in this process
    return Adopt(self, std::move(leader), attempt, /*authenticated=*/false);
  }
  LeaderSessionOptions options{
      .connect = st.config.leader, .token = st.config.token, .deadline = st.reconnect_deadline};
  options.connect.timeout = std::max(TimeLeft(self), caf::timespan{1});
  options.connect.wait_for_leader = true;  // a restarting leader is expected back
  st.reconnect_session =
      OpenLeaderSession(self, std::move(options), [self, attempt](LeaderSessionReply reply) {
        auto& st = self->state;
        if (!Current(self, attempt)) return;
        st.reconnect_session = nullptr;
        if (reply.status.ok()) {
          return Adopt(self, std::move(reply.leader), attempt,
                       /*authenticated=*/!st.config.token.empty());
        }
        // The connector's deadline is the reconnect's; a token the leader did not take is
        // judged as a refused register.
        if (reply.failed_in == SessionState::kConnecting) {
          return Retry(self, StatusText(reply.status));
        }
        if (!Retryable(reply.status)) return Refused(self, reply.status);
        Retry(self, StatusText(reply.status));
      });
}

}  // namespace

bool CanReconnect(AgentPointer self) {
  const auto& st = self->state;
  return st.config.leader_reconnect_timeout > caf::timespan{0} &&
         st.phase == AgentPhase::kRunning && !st.connecting.pending() &&
         (!st.config.local_leader || st.config.reconnect_local_leader);
}

void StartReconnect(AgentPointer self, const std::string& reason) {
  auto& st = self->state;
  EnterPhase(self, AgentPhase::kReconnecting);
  uint64_t episode = ++st.reconnect_episode;
  st.reconnect_deadline = self->clock().now() + st.config.leader_reconnect_timeout;
  st.reconnect_backoff = Backoff(st.config.leader.initial_backoff, st.config.leader.max_backoff);
  st.lost_reason = reason;
  st.reconnect_error.clear();
  StopHeartbeats(self);
  self->delayed_send(self, st.config.leader_reconnect_timeout, deadline_atom::value, episode);
  Try(self);
}

void OnReconnectLeaderDown(AgentPointer self) {
  Retry(self, absl::StrCat("lost ", LeaderName(self), " again"));
}

void StopReconnecting(AgentPointer self) {
  auto& st = self->state;
  if (!Reconnecting(self)) return;
  EnterPhase(self, AgentPhase::kRunning);
  ++st.reconnect_episode;
  ++st.reconnect_try;
  if (st.reconnect_session) {
    self->send_exit(st.reconnect_session, caf::exit_reason::user_shutdown);
    st.reconnect_session = nullptr;
  }
}

void OnReconnectRetry(AgentPointer self, uint64_t attempt) {
  if (Current(self, attempt)) Try(self);
}

void OnReconnectDeadline(AgentPointer self, uint64_t episode) {
  auto& st = self->state;
  if (!Reconnecting(self) || episode != st.reconnect_episode) return;
  Fail(self,
       absl::UnavailableError(absl::StrCat(
           LeaderName(self), " did not come back within ", TimeoutText(self),
           " after the connection was lost (", st.lost_reason, ")",
           st.reconnect_error.empty() ? "" : absl::StrCat("; last error: ", st.reconnect_error),
           "; task ", TaskName(st.config.task),
           " cannot coordinate any more. Restart the leader from its --state-dir "
           "sooner, or raise leader_reconnect_timeout")));
}

}  // namespace muster
