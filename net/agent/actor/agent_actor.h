// The agent actor: a task's side of the coordination protocol, living in the worker's actor
// system. It reaches the leader through a leader session (net/agent/session/: the connector and
// the job token), registers the task, sends heartbeats from an actor timer, forwards requests
// to the leader and keeps every call it forwarded, so that a lost leader fails them at once
// (Unavailable) instead of leaving them hanging. Errors pushed by
// the leader, a lost leader, failed heartbeats or a restarted leader put it in ERROR and call
// the error callback exactly once per error episode. With leader_reconnect_timeout, a lost
// leader is waited for instead (agent_reconnect.cc): the calls are kept and re-sent.
//
//   DISCONNECTED --Connect--> RUNNING --error (pushed, leader lost, heartbeat)--> ERROR
//        ^  ^                  |    ^                                              |
//        |  |     leader lost  v    | registered again, calls re-sent              |
//        |  |          RUNNING (reconnecting) --deadline, refused--> ERROR         |
//        |  +----Shutdown--------+                                                 |
//        +------------------------------------- Reset ----------------------------+
// Inside, each state is a behaviour of the actor (AgentPhase, agent_state.h; agent_phases.cc),
// with CONNECTING and RECONNECTING phases of their own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/typed_actor.hpp>

#include "muster/messages/vocabulary/atoms.h"
#include "muster/messages/vocabulary/interfaces.h"
#include "muster/messages/vocabulary/kv_calls.h"
#include "muster/net/agent/calls/callback_runner_actor.h"
#include "muster/net/agent/connect/leader_connector_actor.h"
#include "muster/net/agent/per_process/barrier_combiner_actor.h"
#include "muster/net/agent/per_process/heartbeat_batcher_actor.h"
#include "muster/net/transport/wire/frame_guard.h"

namespace muster {

class DirectChannel;

enum class AgentState : int32_t { kDisconnected = 0, kRunning = 1, kError = 2 };
const char* AgentStateName(AgentState state);

// A watch callback: local messages only, never sent to another node.
struct WatchCallback {
  std::function<void(const proto::KeyValueChangeEvent&)> on_change;
};

// What the task's threads share with its agent actor without a message: the last step
// (Agent::ReportProgress, carried on every heartbeat) and whether a preemption notice arrived
// (ReachedSyncPoint then asks the actor). Written by the task, read by the actor.
struct AgentProgress {
  static constexpr int64_t kNoStep = INT64_MIN;
  std::atomic<int64_t> step{kNoStep};
  std::atomic<bool> preempting{false};
};

// The agent's state and the error that put it in ERROR (OK otherwise); local only.
struct AgentStatus {
  AgentState state = AgentState::kDisconnected;
  absl::Status error;
  // RUNNING, but the leader was lost and the agent is waiting for it to come back (calls are
  // kept and sent once it is back; see AgentConfig::leader_reconnect_timeout).
  bool reconnecting = false;
  // Watched keys whose watch the leader could not resume after a reconnect (its change
  // history no longer reached back far enough): no more events come; watch them again.
  std::vector<std::string> dropped_watches;
};

struct AgentConfig {
  proto::CoordinatedTask task;  // job name, task id, recoverable flag
  uint64_t incarnation = 0;     // 0: a fresh random one
  bool claim = false;           // register only if the task is free (AgentOptions::claim)
  ConnectOptions leader;        // address, connect deadline, backoff
  // A leader in the same process (address and connector unused when set).
  CoordinatorActor local_leader;
  // Heartbeats go out every heartbeat_timeout / 2. 0: the leader's (its register response's;
  // 10 s from a leader that sends none). A value longer than the leader's makes Connect() fail
  // with FailedPrecondition (the leader would judge the task stale).
  caf::timespan heartbeat_timeout = std::chrono::seconds(10);
  // When set, heartbeats go through this process's batcher instead of straight to the leader.
  HeartbeatBatcherActor heartbeat_batcher;
  // Heartbeats sent straight to the leader go as one-way messages: the leader answers none and
  // pushes an error (ReportErrorToTaskRequest) instead of replying with it, and the agent no
  // longer learns of a silent leader from its beats. Set only when something else detects a
  // silent leader in time: Agent::Create sets it when MayBeatOneWay says CAF's connection
  // timeout and keep-alive ticks do (WorkerNodeOptions of a heartbeat timeout of 2 s or more).
  // With heartbeat_timeout 0 this only allows them: the agent asks MayBeatOneWay once it knows
  // the leader's timeout.
  bool one_way_heartbeats = false;
  // When set, barrier calls go through this process's combiner.
  BarrierCombinerActor barrier_combiner;
  caf::timespan shutdown_barrier_timeout = std::chrono::seconds(10);
  // Timeout of requests that do not block at the leader.
  caf::timespan rpc_timeout = std::chrono::seconds(30);
  // The largest request sent to the leader (its frame limit, less room for the envelope).
  size_t max_request_bytes = WireLimits{}.max_frame_bytes - kFrameEnvelopeBytes;
  // The job token presented before registering (empty: the leader has none).
  std::string token;
  // Set: the route to the leader's direct port is published there while RUNNING
  // (net/agent/direct/direct_channel.h).
  std::shared_ptr<DirectChannel> direct;
  std::function<void(const absl::Status&)> on_error;
  // Shared with the Agent (never null once spawned through Agent::Create).
  std::shared_ptr<AgentProgress> progress = std::make_shared<AgentProgress>();
  // Called once per preemption notice the leader pushes, on the agent's callback runner.
  std::function<void(const proto::PreemptionNotice&)> on_preemption;
  // Called with each new membership of this task's elastic job, on the callback runner.
  std::function<void(const proto::JobMembership&)> on_membership;
  // The generation its launcher started this process for, when this agent's task is the one it
  // named (MUSTER_GENERATION): registrations carry it.
  std::optional<int64_t> generation;
  // How long a RUNNING agent waits for a lost leader to come back (a leader restarted from its
  // state dir) before failing its calls; meanwhile calls are kept and sent once it is back.
  // 0: a lost leader fails every call at once and puts the agent in ERROR. With a value,
  // key-value writes also carry request ids (a re-sent write is applied once).
  caf::timespan leader_reconnect_timeout{0};
  // Seam for in-process leaders and tests: when set, a reconnect asks it for the new leader
  // (null: none yet, ask again after a backoff) instead of connecting to `leader`'s address.
  // Without it a `local_leader` is never reconnected.
  std::function<CoordinatorActor()> reconnect_local_leader;
};

}  // namespace muster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(muster::WatchCallback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(muster::AgentStatus)

namespace muster {

using AgentControlActor = caf::typed_actor<
    // From the leader.
    caf::reacts_to<proto::ReportErrorToTaskRequest>, caf::reacts_to<proto::KeyValueChangeEvent>,
    caf::replies_to<proto::PreemptionNotice>::with<proto::PreemptionAck>,
    caf::reacts_to<proto::SyncPointNotice>, caf::reacts_to<proto::MembershipNotice>,
    // Lifecycle (source task and incarnation are filled in by the agent).
    caf::replies_to<caf::connect_atom>::with<proto::RegisterTaskResponse>,
    caf::replies_to<proto::ShutdownTaskRequest>::with<proto::ShutdownTaskResponse>,
    caf::replies_to<proto::ResetTaskRequest>::with<proto::ResetTaskResponse>,
    caf::replies_to<proto::ReportErrorToServiceRequest>::with<proto::ReportErrorToServiceResponse>,
    caf::replies_to<proto::WaitForAllTasksRequest>::with<proto::WaitForAllTasksResponse>,
    caf::replies_to<proto::GetTaskStateRequest>::with<proto::GetTaskStateResponse>,
    caf::replies_to<proto::WatchJobStateRequest>::with<proto::WatchJobStateResponse>,
    caf::replies_to<proto::GetAliveTasksRequest>::with<proto::GetAliveTasksResponse>,
    // Key-value store: every call of MUSTER_KV_CALLS (kv_calls.h), and the watches.
    MUSTER_KV_CALLS(MUSTER_KV_REPLIES_TO)
        caf::replies_to<proto::WatchKeyRequest, WatchCallback>::with<proto::WatchKeyResponse>,
    caf::replies_to<proto::StopWatchKeyRequest>::with<proto::StopWatchKeyResponse>,
    caf::reacts_to<cancel_atom, std::string>,
    // Withdraws the blocked gets made by a caller (a GetKeyValueAsync's reply sink).
    caf::reacts_to<cancel_atom, caf::actor_addr>,
    // Barriers (the agent keeps the counter of every barrier id).
    caf::replies_to<proto::BarrierRequest>::with<proto::BarrierResponse>,
    caf::replies_to<proto::CancelBarrierRequest>::with<proto::CancelBarrierResponse>,
    caf::replies_to<proto::GetBarrierProgressRequest>::with<proto::GetBarrierProgressResponse>,
    // Preemption: tell the service; is this step the one at which every task stops?
    caf::replies_to<proto::NotifyPreemptionRequest>::with<proto::NotifyPreemptionResponse>,
    caf::replies_to<sync_point_atom, int64_t>::with<bool>,
    // Elastic jobs: the safe point, and the membership now.
    caf::replies_to<proto::WaitForMembershipRequest>::with<proto::WaitForMembershipResponse>,
    caf::replies_to<proto::GetMembershipRequest>::with<proto::GetMembershipResponse>,
    // State and timers.
    caf::replies_to<agent_state_atom>::with<AgentStatus>, caf::reacts_to<beat_atom, uint64_t>,
    caf::reacts_to<retry_atom>,
    // Reconnecting: the next try (by try number) and the deadline (by reconnect episode).
    caf::reacts_to<retry_atom, uint64_t>, caf::reacts_to<deadline_atom, uint64_t>,
    // The earliest deadline of the calls in flight (call_deadlines.h).
    caf::reacts_to<deadline_atom>>;

// `runner`: where the agent's user callbacks run (null: the agent spawns its own).
AgentControlActor SpawnAgentActor(caf::actor_system& system, AgentConfig config,
                                  CallbackRunnerActor runner = {});

}  // namespace muster
