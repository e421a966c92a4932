// The coordinator's state and the functions its handlers share (internal to actors/).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/status/status.h>
#include <caf/actor_addr.hpp>
#include <caf/typed_response_promise.hpp>

#include "muster/actors/barriers/barrier_registry.h"
#include "muster/actors/cluster/alive_tasks.h"
#include "muster/actors/cluster/cluster_view.h"
#include "muster/actors/cluster/device_exchange.h"
#include "muster/actors/cluster/elastic_membership.h"
#include "muster/actors/cluster/task_state_listeners.h"
#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/actors/durability/coordinator_records.h"
#include "muster/actors/health/job_health.h"
#include "muster/actors/kv/routing/kv_router.h"
#include "muster/actors/kv/store/ephemeral_owners.h"
#include "muster/actors/supervision/launcher_registry.h"
#include "muster/actors/supervision/process_fence.h"
#include "muster/actors/tasks/heartbeat_monitor_actor.h"
#include "muster/actors/tasks/task_actor.h"
#include "muster/actors/tasks/task_table.h"

namespace muster {

struct JobStateWatch {
  std::string job;  // empty: every job
  caf::typed_response_promise<proto::WatchJobStateResponse> promise;
};

// A WaitForMembership call waiting for its job's next membership (coordinator_membership.cc).
struct MembershipWait {
  proto::CoordinatedTask task;
  caf::typed_response_promise<proto::WaitForMembershipResponse> promise;
  std::optional<caf::actor_clock::time_point> deadline;  // none: no timeout
};

// The register barrier (every task registers before any registration returns) and the shutdown
// barrier (every non-recoverable task reaches shutdown before any disconnects), when configured.
struct ServiceBarriers {
  std::string register_id;  // empty: registration does not wait for the cluster
  caf::timespan register_timeout{0};
  std::string shutdown_id;  // empty: tasks shut down alone
  caf::timespan shutdown_timeout{0};
  absl::flat_hash_set<std::string> shutdown_arrived;  // tasks waiting in the shutdown barrier
};

// The coordinator's state: its options, and one component per domain, each owning its data.
struct CoordinatorState {
  static inline const char* name = "muster.coordinator";
  CoordinatorOptions options;
  caf::timespan heartbeat_timeout{0};
  caf::timespan connection_loss_grace{0};
  // Every configured task: its slot, state, agent and incarnation (actors/tasks/task_table.h).
  TaskTable tasks;
  // Who hears of each task state change, registered at start (coordinator_actor.cc).
  TaskStateListeners listeners;
  HeartbeatMonitorActor heartbeats;  // linked; holds the deadlines of connected tasks
  std::vector<JobStateWatch> watches;
  AliveTasks alive;
  std::optional<DeviceExchange> devices;
  KvRouter kv;
  EphemeralOwners ephemeral;
  BarrierRegistry barriers;
  ServiceBarriers service;
  // Every child spawned; all of them are stopped when the coordinator stops.
  // (By address: a child's death removes it in O(1), also when thousands die at once.)
  using Children = absl::flat_hash_map<caf::actor_addr, caf::actor>;
  std::shared_ptr<Children> children = std::make_shared<Children>();
  // The last error propagated to the whole cluster: agents that connect later learn it too.
  std::optional<absl::Status> cluster_error;
  // Every registered launcher (monitored), the generation of every task, and the round.
  LauncherRegistry launchers;
  // The processes whose launcher-run task was restarted since: their requests are refused.
  ProcessFence fence;
  // Steps, the stuck rule and the preemption protocol (coordinator_health.cc).
  JobHealth health;
  // Durable state (coordinator_durable.cc): the coordinator's records in the state dir.
  CoordinatorRecords records;
  // The membership of every elastic job, by job name, and the calls waiting at their safe
  // points (at most one per task).
  absl::flat_hash_map<std::string, ElasticMembership> elastic;
  std::vector<MembershipWait> membership_waits;
};

using CoordinatorPointer = CoordinatorActor::stateful_pointer<CoordinatorState>;

// Spawns (or restarts) the task actor of `task`, starting in `initial`, and supervises it.
// `reconnect_window`: see TaskSpec (a task recovered CONNECTED by a restarted leader).
void SpawnTask(CoordinatorPointer self, const proto::CoordinatedTask& task,
               const proto::CoordinatedTaskStateInfo& initial,
               caf::timespan reconnect_window = caf::timespan{0});

// Records a task's new state in the task table (its agent, its heartbeat deadline, its live
// incarnation, the version) and publishes it to the listeners.
void OnTaskState(CoordinatorPointer self, const proto::CoordinatedTaskStateInfo& info,
                 const AgentActor& agent);
// Registers everything that depends on task states, in the order they hear of a change.
void RegisterTaskStateListeners(CoordinatorPointer self);

// Pushes `report` to the slot's agent, unless it is not connected or was pushed an error since
// it connected.
void PushError(CoordinatorPointer self, TaskSlot& slot,
               const proto::ReportErrorToTaskRequest& report);
// Delivers `answer` (a response, or a refusal as a caf::error) through `promise` once the task
// states persisted before it are durable; nothing when the write failed and pauses the leader
// (LeavesCallsUnanswered: the agent re-sends the call to the next leader).
template <class Promise, class Answer>
void AnswerOnceDurable(CoordinatorPointer self, Promise promise, Answer answer) {
  self->state.records.gate().After(
      [promise, answer = std::move(answer)](const absl::Status& written) mutable {
        if (!LeavesCallsUnanswered(written)) promise.deliver(std::move(answer));
      });
}
// Sends `report` to `agent` once the task states persisted before it are durable, and never
// after a failed write: a failure told is a change revealed. (An HA leader that lost its lease
// unnoticed, e.g. paused, fails its fenced write and so tells the job nothing.)
void SendErrorOnceDurable(CoordinatorPointer self, const AgentActor& agent,
                          proto::ReportErrorToTaskRequest report);

// Routes a heartbeat (a request, or sent one-way: then only an error is told, pushed to the
// sending agent) to the heartbeat monitor with its task's slot and actor.
caf::result<proto::HeartbeatResponse> Heartbeat(CoordinatorPointer self,
                                                const proto::HeartbeatRequest& request);
// Routes a batch of heartbeats of one process to the heartbeat monitor.
caf::result<proto::HeartbeatBatchResponse> HeartbeatBatch(CoordinatorPointer self,
                                                          proto::HeartbeatBatchRequest& request);

// Handles the death of a child: a task actor that died with an error is a task failure.
void OnChildDown(CoordinatorPointer self, const caf::down_msg& down);

// PermissionDenied unless the current message comes from the node on which `task` last
// connected (or from this coordinator, or `task` never connected). A task acts only as itself.
absl::Status ActsAsItself(CoordinatorPointer self, const proto::CoordinatedTask& task);

// Routes a barrier request to its instance (starting one when needed) or answers it at once.
caf::result<proto::BarrierResponse> RouteBarrier(CoordinatorPointer self,
                                                 proto::BarrierRequest request);
// Answers a group of arrivals: each source goes through RouteBarrier as a request of its own
// (a local message); the group's one reply lists the sources that failed.
caf::result<proto::BarrierGroupResponse> RouteBarrierGroup(CoordinatorPointer self,
                                                           const proto::BarrierGroupRequest& group);
caf::result<proto::CancelBarrierResponse> RouteCancelBarrier(
    CoordinatorPointer self, const proto::CancelBarrierRequest& request);
// The barrier registry of a new coordinator or round: the register and shutdown barriers are
// one-time barriers.
BarrierRegistry NewBarrierRegistry(const CoordinatorState& state);
// Records a finished barrier instance; the register and shutdown barriers act on the cluster.
// `end`: who had not arrived at a failed instance (BarrierParentActor).
void OnBarrierDone(CoordinatorPointer self, const std::string& id, int64_t counter,
                   const caf::error& result, const proto::BarrierInfo& end);
// RegisterTask through the register barrier (cluster_register_with_barrier).
caf::result<proto::RegisterTaskResponse> RegisterThroughBarrier(
    CoordinatorPointer self, const TaskActor& task, const proto::RegisterTaskRequest& request,
    const AgentActor& agent);
// ShutdownTask through the shutdown barrier (shutdown_barrier_timeout > 0).
caf::result<proto::ShutdownTaskResponse> ShutdownThroughBarrier(
    CoordinatorPointer self, const proto::ShutdownTaskRequest& request);

// Launchers (coordinator_launchers.cc).
caf::result<proto::RegisterLauncherResponse> RegisterLauncher(
    CoordinatorPointer self, const proto::RegisterLauncherRequest& request,
    const LauncherActor& launcher);
caf::result<proto::TaskExitedResponse> TaskExited(CoordinatorPointer self,
                                                  const proto::TaskExitedRequest& request);
proto::LauncherStatusResponse LauncherStatus(CoordinatorPointer self);
// Carries out the restart a supervision decision asks for and tells every launcher what was
// decided about the failure of `failed`.
void RestartAndNotify(CoordinatorPointer self, const proto::CoordinatedTask& failed,
                      const FailureDecision& decision);

// An error when the current message comes from a process that a restart replaced (ProcessFence):
// the handlers of a task's calls refuse it before they look at the request.
caf::error Fenced(CoordinatorPointer self);
// FailedPrecondition for a registration that says it comes from a process its launcher started
// for a generation of the task that a restart replaced: such a process may never have
// connected, so the fence does not know its node. OK without a generation, or for a task no
// launcher runs.
absl::Status IsCurrentGeneration(CoordinatorPointer self,
                                 const proto::RegisterTaskRequest& request);

// Job health (coordinator_health.cc).
// Records the step a heartbeat carries (when the beating incarnation is connected).
void RecordProgress(CoordinatorPointer self, const proto::HeartbeatRequest& beat,
                    const TaskSlot& slot);
// Starts the stuck-task timer when the configuration asks for the rule.
void StartProgressChecks(CoordinatorPointer self);
// Fails the tasks the stuck rule finds, then arms the timer again.
void CheckProgress(CoordinatorPointer self);
// The health bookkeeping of a task whose state changed: progress and preemption.
void OnHealthState(CoordinatorPointer self, const TaskStateChange& change);
// The ephemeral keys of an incarnation that ended are dropped from every directory.
void OnEphemeralOwnerState(CoordinatorPointer self, const TaskStateChange& change);
caf::result<proto::GetBarrierProgressResponse> GetBarrierProgress(
    CoordinatorPointer self, const proto::GetBarrierProgressRequest& request);
caf::result<proto::NotifyPreemptionResponse> NotifyPreemption(
    CoordinatorPointer self, const proto::NotifyPreemptionRequest& request);
// The owner incarnation of an ephemeral write (0 for a persistent one); records that the
// incarnation owns keys. Possible errors:
// InvalidArgument (no or unknown source task), PermissionDenied (not acting as itself),
// FailedPrecondition (the task is not connected).
absl::StatusOr<uint64_t> EphemeralOwner(CoordinatorPointer self, bool ephemeral,
                                        const proto::CoordinatedTask& source);

// Elastic jobs (coordinator_membership.cc).
// Creates the membership of every job of the configuration that has a size range.
void InitElasticJobs(CoordinatorPointer self);
// Feeds a task state change to its job's membership (when the job is elastic).
void OnMembershipState(CoordinatorPointer self, const TaskStateChange& change);
// The job's timer: its settle deadline, and the deadlines of its waiting calls.
void OnMembershipTimer(CoordinatorPointer self, const std::string& job);
caf::result<proto::WaitForMembershipResponse> WaitForMembership(
    CoordinatorPointer self, const proto::WaitForMembershipRequest& request);
caf::result<proto::GetMembershipResponse> GetMembership(CoordinatorPointer self,
                                                        const proto::GetMembershipRequest& request);

// Durable state (coordinator_durable.cc).
// Restores the view, live incarnations, version, round and barrier results from
// options.recovered and records the leader's start; returns the reconnect window of the tasks
// recovered CONNECTED.
caf::timespan RestoreCoordinator(CoordinatorPointer self);
// Gives the task slots the generations recovered (after the tasks were spawned).
void RestoreGenerations(CoordinatorPointer self);
// The key-value router of the coordinator: directory actors it spawns are supervised, record
// their changes through the state writer, and the directories recovered exist from the start
// (root-wide reads and deletes reach them). Recovered ephemeral keys belong to their live
// incarnation again; those of an incarnation no longer live are deleted. Adds the state writer
// to the children.
KvRouter NewKvRouter(CoordinatorPointer self);
// Stops every child when the coordinator stops; a leader with a state dir pauses them instead
// (waiting calls stay unanswered, to be re-sent to the restarted leader).
void StopChildrenOnExit(CoordinatorPointer self);
// Records a task's new state and the job-state version.
void PersistTaskState(CoordinatorPointer self, const proto::CoordinatedTaskStateInfo& info);
// Records a new round: the barrier results of the last one are dropped.
void PersistNewRound(CoordinatorPointer self, const std::vector<std::string>& barrier_ids);

// Reads of every task's state (coordinator_task_reads.cc). Possible errors of GetTaskState:
// InvalidArgument (unknown task).
caf::result<proto::GetTaskStateResponse> GetTaskState(CoordinatorPointer self,
                                                      const proto::GetTaskStateRequest& request);
proto::TaskColumns TaskColumnsOf(CoordinatorPointer self);
// Possible errors of WatchJobState: InvalidArgument (unknown job, a version ahead of the
// service); of GetAliveTasks: InvalidArgument (unknown task, requester not in the set),
// PermissionDenied (not acting as itself).
caf::result<proto::WatchJobStateResponse> WatchJobState(CoordinatorPointer self,
                                                        const proto::WatchJobStateRequest& request);
caf::result<proto::GetAliveTasksResponse> GetAliveTasks(CoordinatorPointer self,
                                                        const proto::GetAliveTasksRequest& request);

// Answers a job-state watch with the current states of its job.
proto::WatchJobStateResponse JobState(CoordinatorPointer self, const std::string& job);

// Events (coordinator_events.cc): what happened, for the event log and the metrics. A handler
// builds an event only when EventsWanted(), so that a coordinator with neither pays nothing:
//   if (EventsWanted(self)) EmitEvent(self, TaskStateEvent(info));
inline bool EventsWanted(CoordinatorPointer self) {
  return self->state.options.events || self->state.options.metrics;
}
// Counts `event` in the metrics and sends it to the event log (which stamps its seq and time).
void EmitEvent(CoordinatorPointer self, proto::JobEvent event);
// LEADER_STARTED: "fresh", or what was recovered from the state dir.
proto::JobEvent LeaderStartedEvent(const CoordinatorOptions& options);
// TASK_REGISTERED (CONNECTED), TASK_FAILED (ERROR, with its cause) or TASK_STATE_CHANGED.
proto::JobEvent TaskStateEvent(const proto::CoordinatedTaskStateInfo& info);
// What a supervision decision about the failure of `failed` started: TASK_RESTARTED,
// ROUND_STARTED (with the new round) or JOB_FAILED; nothing for a failure told or tolerated.
void EmitDecisionEvents(CoordinatorPointer self, const proto::CoordinatedTask& failed,
                        const FailureDecision& decision);
// BARRIER_OPENED for the instance a first call starts.
proto::JobEvent BarrierOpenedEvent(const BarrierSpec& spec);
// BARRIER_PASSED, or BARRIER_FAILED with the cause and who had not arrived (`end`).
proto::JobEvent BarrierDoneEvent(const std::string& id, int64_t counter, const absl::Status& result,
                                 const proto::BarrierInfo& end);
// TASK_STUCK: the stuck rule failed the task (detail: its step).
proto::JobEvent TaskStuckEvent(const proto::TaskStuck& stuck, const absl::Status& error,
                               uint64_t incarnation);
// PREEMPTION_NOTICED: a task announced a preemption (detail: its reason).
proto::JobEvent PreemptionEvent(const proto::NotifyPreemptionRequest& request, bool first);
// WatchEvents, answered by the event log (a coordinator without one answers with no events).
caf::result<proto::WatchEventsResponse> WatchEvents(CoordinatorPointer self,
                                                    const proto::WatchEventsRequest& request);

}  // namespace muster
