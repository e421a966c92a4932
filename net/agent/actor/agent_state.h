// The agent actor's state and the functions its handlers share (internal to net/).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <google/protobuf/message.h>
#include <caf/duration.hpp>
#include <caf/typed_response_promise.hpp>

#include <absl/strings/str_cat.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/actor/agent_actor.h"
#include "muster/net/agent/calls/call_deadlines.h"
#include "muster/net/agent/session/leader_session_actor.h"

namespace muster {

// The agent actor's lifecycle. Each phase is one behaviour of the actor (agent_phases.cc), which
// answers Connect, Shutdown and Reset and takes the phase's timers; `phase` names the behaviour
// in use, for the handlers every phase shares. CONNECTING and RECONNECTING are DISCONNECTED and
// RUNNING to the agent's users (AgentStatus).
//
//   DISCONNECTED --Connect--> CONNECTING --registered--> RUNNING --leader lost--> RECONNECTING
//        ^   ^                    |                       |  ^                     |    |
//        |   |                    | failed                |  +---registered again--+    |
//        |   |                    v                       v                             |
//        |   +----- Reset ----- ERROR <--pushed error, lost leader, heartbeat-----------+
//        +-------------- Shutdown (from every phase but CONNECTING) ---------------------
enum class AgentPhase { kDisconnected, kConnecting, kRunning, kReconnecting, kError };

// The state the agent's users see in a phase.
inline AgentState PublicState(AgentPhase phase) {
  switch (phase) {
    case AgentPhase::kDisconnected:
    case AgentPhase::kConnecting:
      return AgentState::kDisconnected;
    case AgentPhase::kRunning:
    case AgentPhase::kReconnecting:
      return AgentState::kRunning;
    case AgentPhase::kError:
      return AgentState::kError;
  }
  return AgentState::kError;
}

struct AgentActorState {
  static inline const char* name = "muster.agent";
  AgentConfig config;
  // RUNNING (or RECONNECTING): the leader accepted this agent's registration, and it has not
  // left since. Only then does Shutdown() tell the leader (an agent whose Connect failed must
  // not disconnect the task, which may belong to a newer incarnation by now).
  AgentPhase phase = AgentPhase::kDisconnected;
  absl::Status error;  // what put the agent in ERROR
  // The leader of the current connection, and whether it accepted the job token on it (a leader
  // session of this agent presented it, net/agent/session/leader_session_actor.h, and keeps the
  // node admitted while it lives). Set by AdoptLeader and DropLeader only.
  CoordinatorActor leader;
  bool authenticated = false;
  uint64_t leader_incarnation = 0;
  // The leader's direct port, from its last registration answer (0: none): published for the
  // agent's direct calls while RUNNING (EnterPhase).
  uint32_t direct_port = 0;
  // The Connect() under way (CONNECTING; it may outlive the phase: a pushed error puts the agent
  // in ERROR while its registration still runs, and a Shutdown leaves it running).
  caf::typed_response_promise<proto::RegisterTaskResponse> connecting;
  caf::actor_clock::time_point connect_deadline;
  Backoff connect_backoff{caf::timespan{0}, caf::timespan{0}};
  uint64_t beat_generation = 0;  // a beat timer of an older generation is stale
  // The heartbeat timeout in use (config.heartbeat_timeout, or the leader's when that is 0)
  // and whether beats go one-way; set at each registration (AdoptHeartbeatTimeout).
  caf::timespan heartbeat_timeout{std::chrono::seconds(10)};
  bool one_way_heartbeats = false;
  // When a heartbeat was last answered, or bytes from the leader last arrived (a leader that is
  // sending a large frame is alive though its answers queue behind it), and how many bytes had
  // arrived then (GuardedMultiplexer::BytesReadFrom).
  caf::actor_clock::time_point last_heartbeat_ok;
  uint64_t leader_bytes_seen = 0;
  // Calls forwarded to the leader and not answered yet, by call id (the order they were made):
  // how to (re)send them and how to fail them.
  struct Pending {
    std::function<void(const caf::error&)> fail;
    // Sends the call to the current leader as a new attempt (answers of older attempts are
    // ignored); a call made while reconnecting is first sent once the leader is back.
    std::function<void()> send;
    uint64_t attempt = 0;
    // Finite: the call fails with CAF's request_timeout this long after each attempt was sent
    // (the agent's own deadline, see call_deadlines; the request itself has none).
    caf::duration timeout = caf::duration{caf::infinite};
    bool cancel_on_shutdown = false;  // blocking calls: GetKeyValue, Barrier
    std::string key;                  // GetKeyValue: the key to withdraw at the leader
    caf::actor_addr caller;           // GetKeyValue: who may cancel it ((cancel_atom))
    uint64_t write_seq = 0;           // a write numbered by this actor: its request id's seq
  };
  std::map<uint64_t, Pending> pending;
  uint64_t next_call = 0;
  CallDeadlines call_deadlines;   // of the pending calls with a finite timeout, by call id
  CallbackRunnerActor callbacks;  // runs the user's callbacks, in order (RunUserCallback)
  absl::flat_hash_map<std::string, int64_t> barrier_counters;    // last counter per barrier id
  absl::flat_hash_map<std::string, int64_t> barriers_in_flight;  // id -> counter sent
  // Watches by normalised key: the callback, and the highest revision delivered (first the
  // WatchKeyResponse's), from which a reconnect resumes the watch; older events are dropped.
  struct Watch {
    WatchCallback callback;
    uint64_t id = 0;  // tells this watch from a later one of the same key
    int64_t revision = 0;
    bool started = false;  // the leader answered the WatchKeyRequest
  };
  absl::flat_hash_map<std::string, Watch> watches;
  uint64_t next_watch = 0;
  std::vector<std::string> dropped_watches;  // resumes the leader refused (AgentStatus)
  // RECONNECTING to a lost leader (agent_reconnect.cc): the episode (its deadline timer
  // carries it), the current try (retries, connector and register answers carry it), when it
  // ends, the backoff, why the leader was lost and the last error of a try.
  uint64_t reconnect_episode = 0;
  uint64_t reconnect_try = 0;
  caf::actor_clock::time_point reconnect_deadline;
  Backoff reconnect_backoff{caf::timespan{0}, caf::timespan{0}};
  // The leader session of the current try, until it answered.
  LeaderSessionActor reconnect_session;
  std::string lost_reason;
  std::string reconnect_error;
  // Request ids of key-value writes (with leader_reconnect_timeout): random per agent actor,
  // and the last sequence number used (OldestWriteInFlight: the lowest one still pending).
  uint64_t request_client = 0;
  uint64_t request_seq = 0;
  // Key-value calls made before Connect() (as the reference agent allows) wait here for a
  // connection to the leader, made without registering the task (WithLeader).
  std::vector<std::function<void(const absl::Status&)>> awaiting_leader;
  // Preemption: the notice, the step this task answered it with, the sync step once the
  // leader decided it, and the ReachedSyncPoint calls waiting for it (step, promise).
  std::optional<proto::PreemptionNotice> preemption;
  std::optional<int64_t> answered_step;
  std::optional<int64_t> sync_step;
  std::vector<std::pair<int64_t, caf::typed_response_promise<bool>>> sync_waiters;
  // The notice's on_preemption has run on the callback runner: a task learns of the notice
  // before ReachedSyncPoint says true. notice_seq tells a stale runner answer from the current.
  bool notice_delivered = false;
  uint64_t notice_seq = 0;
};

using AgentPointer = AgentControlActor::stateful_pointer<AgentActorState>;

// Runs `callback` (user code) on the agent's callback runner, after the ones before it: the
// agent actor runs on the network thread, where user code must not run.
void RunUserCallback(AgentPointer self, std::function<void()> callback);
// Runs `then` once the user callbacks sent so far have run (or the runner has stopped).
void AfterUserCallbacks(AgentPointer self, std::function<void()> then);

// Puts the agent in ERROR with `status` and calls the error callback (once per episode).
void SetError(AgentPointer self, const absl::Status& status);

// Fails every forwarded call with `status` (all of them, or only the blocking ones).
void FailPending(AgentPointer self, const absl::Status& status, bool blocking_only);

// Fails the blocked gets made by `caller` with Cancelled and withdraws each key at the leader
// once no other get of it is pending.
void CancelGetsOf(AgentPointer self, const caf::actor_addr& caller);

// ResourceExhausted for a request larger than the leader accepts (AgentConfig::
// max_request_bytes): refused here, instead of the leader closing the connection.
absl::Status CheckRequestSize(AgentPointer self, const google::protobuf::Message& request);

// FailedPrecondition naming the agent's state, for calls made in the wrong state.
absl::Status WrongState(AgentPointer self, absl::string_view call);

// The FailedPrecondition of a call made while the agent has no connection to the leader.
absl::Status NoLeader(AgentPointer self);

// The behaviour of `phase`, and entering it: its behaviour replaces the current one
// (agent_phases.cc).
AgentControlActor::behavior_type PhaseBehavior(AgentPointer self, AgentPhase phase);
void EnterPhase(AgentPointer self, AgentPhase phase);

inline bool Reconnecting(AgentPointer self) {
  return self->state.phase == AgentPhase::kReconnecting;
}

// The task is registered at the leader: RUNNING, or RECONNECTING (its calls are kept then).
inline bool Registered(AgentPointer self) {
  return PublicState(self->state.phase) == AgentState::kRunning;
}

// Whether the agent can make calls to a leader: it has one, or is waiting for a lost one to
// come back (calls are then kept and sent once it is back).
inline bool HasLeader(AgentPointer self) { return self->state.leader || Reconnecting(self); }

// Whether the leader in hand still needs the job token: the agent has one, and the leader is in
// another process and did not accept it on this connection yet.
inline bool NeedsToken(AgentPointer self) {
  const auto& st = self->state;
  return !st.config.token.empty() && !st.authenticated && st.leader != st.config.local_leader;
}

// Talks to `leader` from now on (watching it); `authenticated`: it accepted the job token on
// this connection already.
inline void AdoptLeader(AgentPointer self, CoordinatorActor leader, bool authenticated) {
  auto& st = self->state;
  st.leader = std::move(leader);
  st.authenticated = authenticated;
  self->monitor(st.leader);
}

// Forgets the leader (lost, or to connect anew): a new connection proves the token again.
inline void DropLeader(AgentPointer self) {
  auto& st = self->state;
  if (st.leader) self->demonitor(st.leader.address());
  st.leader = nullptr;
  st.authenticated = false;
}

// Takes the in-process leader (AgentConfig::local_leader) when the agent has no leader yet.
inline void UseLocalLeader(AgentPointer self) {
  auto& st = self->state;
  if (!st.leader && st.config.local_leader) {
    AdoptLeader(self, st.config.local_leader, st.authenticated);
  }
}

// Takes what a leader session that opened reached: its leader, unless the agent found one
// meanwhile, and, with a job token, the admission the session presented.
inline void AdoptSession(AgentPointer self, LeaderSessionReply& reply) {
  auto& st = self->state;
  bool authenticated = st.authenticated || !st.config.token.empty();
  if (!st.leader) {
    AdoptLeader(self, std::move(reply.leader), authenticated);
  } else {
    st.authenticated = authenticated;
  }
}

// Lifecycle (agent_actor.cc): what the phases' behaviours answer (agent_phases.cc).
// Connect() in DISCONNECTED; in another phase, NotDisconnected's FailedPrecondition.
caf::result<proto::RegisterTaskResponse> Connect(AgentPointer self);
absl::Status NotDisconnected(AgentPointer self);
// Reset() in ERROR; in another phase, NotInError's FailedPrecondition.
caf::result<proto::ResetTaskResponse> Reset(AgentPointer self);
absl::Status NotInError(AgentPointer self);
// Shutdown() of a RUNNING agent, which tells the leader; of an agent whose task is not
// registered (DISCONNECTED, CONNECTING, ERROR), which leaves without asking it; and of a
// RECONNECTING agent, which fails the calls it kept.
caf::result<proto::ShutdownTaskResponse> ShutdownRunning(AgentPointer self);
caf::result<proto::ShutdownTaskResponse> LeaveLocally(AgentPointer self);
caf::result<proto::ShutdownTaskResponse> ShutdownReconnecting(AgentPointer self);
// The Connect() retry timer: registers again while a Connect() is under way.
void OnRetry(AgentPointer self);
void HandlePushedError(AgentPointer self, const proto::ReportErrorToTaskRequest& report);
// Whether the message being handled came from another process than this one and the agent's
// current leader: a leader the agent left (an HA leader that stepped down, or one paused past
// its lease) whose pushes (errors, watch events, notices) arrive late. They are dropped (a
// preemption notice is acknowledged unseen): only the current leader speaks for the job.
bool FromFormerLeader(AgentPointer self);
// The rule, by nodes: a message from `sender` (none: sent anonymously) to an agent in process
// `own` whose current leader runs on `leader` (none: it has none now) is a former leader's when
// it came from another process than both.
bool IsFormerLeaderNode(const caf::node_id& sender, const caf::node_id& own,
                        const caf::node_id& leader);
// "HOST:PORT" of the configured leader.
std::string LeaderAddress(AgentPointer self);
// Whether a failed connect or register may be tried again: transport errors (no coordination
// payload) and Internal (leader stopping or not ready); every other answer of the leader is
// final, the token gate's (Unauthenticated, PermissionDenied) too.
bool Retryable(const absl::Status& status);

// Heartbeats (agent_heartbeat.cc): start (or restart) them, stop them, and one beat's timer.
// Takes the heartbeat timeout from the leader's register response when the agent has none of
// its own; FailedPrecondition when the agent's own is longer than the leader's.
absl::Status AdoptHeartbeatTimeout(AgentPointer self, const proto::RegisterTaskResponse& response);
void StartHeartbeats(AgentPointer self);
void StopHeartbeats(AgentPointer self);
void HandleBeat(AgentPointer self, uint64_t generation);

// Reconnecting to a lost leader (agent_reconnect.cc; AgentConfig::leader_reconnect_timeout).
// Whether a leader lost now is waited for (a RUNNING, registered agent with a timeout, and a
// way to find the leader again).
bool CanReconnect(AgentPointer self);
// The leader was lost (`reason`): keep the calls, pause heartbeats, and connect again.
void StartReconnect(AgentPointer self, const std::string& reason);
// The leader found while reconnecting was lost too: try again (until the deadline).
void OnReconnectLeaderDown(AgentPointer self);
// Ends a reconnect without an outcome for the calls (Shutdown, SetError): they stay pending.
void StopReconnecting(AgentPointer self);
void OnReconnectRetry(AgentPointer self, uint64_t attempt);
void OnReconnectDeadline(AgentPointer self, uint64_t episode);

// Watches (calls/agent_watches.cc).
caf::result<proto::WatchKeyResponse> WatchKey(AgentPointer self,
                                              const proto::WatchKeyRequest& request,
                                              const WatchCallback& callback);
caf::result<proto::StopWatchKeyResponse> StopWatchKey(AgentPointer self,
                                                      const proto::StopWatchKeyRequest& request);
// Delivers a change event to its watch, unless the watch delivered that revision already.
void OnChange(AgentPointer self, const proto::KeyValueChangeEvent& event);
// Sends the WatchKeyRequest of every started watch again, from the last revision it delivered
// (after a reconnect); a watch the leader cannot resume is dropped (AgentStatus).
void ResumeWatches(AgentPointer self);

// Preemption (agent_health.cc).
proto::PreemptionAck OnPreemptionNotice(AgentPointer self, const proto::PreemptionNotice& notice);
void OnSyncPoint(AgentPointer self, const proto::SyncPointNotice& notice);
caf::result<bool> ReachedSyncPoint(AgentPointer self, int64_t step);
caf::result<proto::NotifyPreemptionResponse> NotifyPreemption(
    AgentPointer self, proto::NotifyPreemptionRequest request);
// Fails the ReachedSyncPoint calls waiting for the sync step (the agent failed or left).
void FailSyncWaiters(AgentPointer self, const absl::Status& status);
// Forgets the notice and sync step (Reset: the next registration brings them again).
void ForgetPreemption(AgentPointer self);

}  // namespace muster
