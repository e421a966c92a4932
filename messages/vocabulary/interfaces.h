// The typed actor interfaces of Muster. Every request and reply is a muster::proto message;
// each handler lists its possible errors (absl codes, see docs/protocol.md).
#pragma once

#include <caf/replies_to.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "muster/messages/vocabulary/atoms.h"
#include "muster/messages/vocabulary/kv_calls.h"
#include "muster/messages/vocabulary/proto_inspect.h"
#include "muster/proto/coordination_service.pb.h"
#include "muster/proto/observe.pb.h"

namespace muster {

// The agent side of a task, as the leader sees it: the leader pushes errors to it.
// It also pushes the job's events: a preemption notice, answered with the task's last step,
// and the step at which every task stops (docs/protocol.md, "Preemption"), and each new
// membership of an elastic job.
using AgentActor =
    caf::typed_actor<caf::reacts_to<proto::ReportErrorToTaskRequest>,
                     caf::replies_to<proto::PreemptionNotice>::with<proto::PreemptionAck>,
                     caf::reacts_to<proto::SyncPointNotice>,
                     caf::reacts_to<proto::MembershipNotice>>;

// A launcher (`muster run`), as the leader sees it: the coordinator tells it what the supervision
// policy decided after each task failure (restart some of its tasks, or stop: the job failed).
using LauncherActor = caf::typed_actor<caf::reacts_to<proto::SupervisionEvent>>;

// A key-value watcher: receives the changes of the keys it watches, in the order they happened.
using KvWatcherActor = caf::typed_actor<caf::reacts_to<proto::KeyValueChangeEvent>>;

// The key-value store's requests (docs/protocol.md, "Key-value store"), answered by the
// coordinator (which routes each to the directory actor of the key's first path segment, and
// fans root-spanning reads and deletes out) and by each directory actor: every call of
// MUSTER_KV_CALLS (kv_calls.h, with the possible errors of each), and the watches.
// Possible errors of all: InvalidArgument (empty or too long key), ResourceExhausted (value too
// large, directory full).
using KvStoreActor = caf::typed_actor<
    MUSTER_KV_CALLS(MUSTER_KV_REPLIES_TO)
    // Sends the watcher a KeyValueChangeEvent per change of the key or of keys under it.
    caf::replies_to<proto::WatchKeyRequest, KvWatcherActor>::with<proto::WatchKeyResponse>,
    caf::replies_to<proto::StopWatchKeyRequest, KvWatcherActor>::with<proto::StopWatchKeyResponse>,
    // Withdraws the sender's blocked GetKeyValue calls on a key (they get Cancelled).
    caf::reacts_to<cancel_atom, std::string>>;

// The coordinator: the leader's published entry point. Requests are answered with the reply
// message or an error status (docs/protocol.md lists every error per request).
using CoordinatorActor = caf::typed_actor<
    // Presents the job token (checked by the token gate in front of a published coordinator;
    // the coordinator itself accepts it). Possible errors: Unauthenticated (wrong token).
    caf::replies_to<proto::AuthenticateRequest>::with<proto::AuthenticateResponse>,
    // Registers a task and its agent actor. Possible errors: InvalidArgument (unknown task),
    // Aborted (restarted, in ERROR), FailedPrecondition (a replaced generation, a fenced node).
    caf::replies_to<proto::RegisterTaskRequest, AgentActor>::with<proto::RegisterTaskResponse>,
    // Possible errors: InvalidArgument (unknown or unregistered task), Aborted (task in ERROR or
    // restarted).
    caf::replies_to<proto::HeartbeatRequest>::with<proto::HeartbeatResponse>,
    // The heartbeats of several tasks; every beat gets its own result (the errors above).
    caf::replies_to<proto::HeartbeatBatchRequest>::with<proto::HeartbeatBatchResponse>,
    // Possible errors: InvalidArgument, FailedPrecondition (not connected), Internal (a task
    // failed before every task arrived).
    caf::replies_to<proto::WaitForAllTasksRequest>::with<proto::WaitForAllTasksResponse>,
    // Possible errors: InvalidArgument, FailedPrecondition (already disconnected), Internal
    // (shutdown barrier failed).
    caf::replies_to<proto::ShutdownTaskRequest>::with<proto::ShutdownTaskResponse>,
    // Possible errors: InvalidArgument, FailedPrecondition (already disconnected).
    caf::replies_to<proto::ResetTaskRequest>::with<proto::ResetTaskResponse>,
    // Possible errors: InvalidArgument, FailedPrecondition (not connected or in ERROR).
    caf::replies_to<proto::ReportErrorToServiceRequest>::with<proto::ReportErrorToServiceResponse>,
    // Possible errors: InvalidArgument (unknown task).
    caf::replies_to<proto::GetTaskStateRequest>::with<proto::GetTaskStateResponse>,
    // Possible errors: InvalidArgument (unknown job, version ahead of the service).
    caf::replies_to<proto::WatchJobStateRequest>::with<proto::WatchJobStateResponse>,
    // Possible errors: InvalidArgument (requester not in the set, unknown task).
    caf::replies_to<proto::GetAliveTasksRequest>::with<proto::GetAliveTasksResponse>,
    // Barriers (docs/protocol.md, "Barriers"): one barrier actor per live instance.
    // Possible errors: DeadlineExceeded (names every missing task), Cancelled, Aborted (leader
    // shutting down), Internal (a participant in ERROR or gone; counter mismatch),
    // InvalidArgument (conflicting sets, unknown task, caller not in the set).
    caf::replies_to<proto::BarrierRequest>::with<proto::BarrierResponse>,
    // The arrivals of several tasks at one barrier instance; each source's errors are those of
    // BarrierRequest, listed per source. Never fails as a whole.
    caf::replies_to<proto::BarrierGroupRequest>::with<proto::BarrierGroupResponse>,
    // Possible errors: FailedPrecondition (already passed, wrong counter).
    caf::replies_to<proto::CancelBarrierRequest>::with<proto::CancelBarrierResponse>,
    // Every open barrier with the tasks it still waits for.
    caf::replies_to<proto::GetBarriersRequest>::with<proto::GetBarriersResponse>,
    // The size of every key-value directory (keys, bytes, parked calls, watches).
    caf::replies_to<proto::GetKvStatsRequest>::with<proto::GetKvStatsResponse>,
    // Every configured task's state, heartbeat age and step, as columns (the leader's metrics).
    caf::replies_to<proto::GetTaskColumnsRequest>::with<proto::TaskColumns>,
    // The open instance of one barrier. Possible errors: InvalidArgument (empty id), NotFound
    // (no open instance).
    caf::replies_to<proto::GetBarrierProgressRequest>::with<proto::GetBarrierProgressResponse>,
    // One task learns of a coming preemption; every task is told and gets the step at which
    // all stop. Possible errors: InvalidArgument (unknown task, reason too long),
    // FailedPrecondition (the task is not connected), PermissionDenied (not acting as itself).
    caf::replies_to<proto::NotifyPreemptionRequest>::with<proto::NotifyPreemptionResponse>,
    // An elastic job's safe point (docs/protocol.md, "Elastic jobs"). Possible errors:
    // InvalidArgument (unknown task, a job that is not elastic, a negative version, a timeout
    // out of range), FailedPrecondition (the task is not connected; a later call of the task
    // took its place), PermissionDenied (not acting as itself), DeadlineExceeded (names the
    // members that did not arrive, or says the task was not admitted).
    caf::replies_to<proto::WaitForMembershipRequest>::with<proto::WaitForMembershipResponse>,
    // An elastic job's membership now. Possible errors: InvalidArgument (not an elastic job).
    caf::replies_to<proto::GetMembershipRequest>::with<proto::GetMembershipResponse>,
    // Registers the launcher that runs the processes of some tasks; it receives a
    // SupervisionEvent after every task failure. Possible errors: InvalidArgument (unknown
    // task, no tasks, duplicates), AlreadyExists (a task has a live launcher already),
    // PermissionDenied (the launcher actor is not the sender's own).
    caf::replies_to<proto::RegisterLauncherRequest,
                    LauncherActor>::with<proto::RegisterLauncherResponse>,
    // A launcher's process of a task exited on its own. Possible errors: InvalidArgument
    // (unknown task), PermissionDenied (the sender is not the task's launcher).
    caf::replies_to<proto::TaskExitedRequest>::with<proto::TaskExitedResponse>,
    // How many launchers are registered and tasks connected (a hosting launcher's last wait).
    caf::replies_to<proto::LauncherStatusRequest>::with<proto::LauncherStatusResponse>,
    // The job's events after after_seq (muster events; answered by the leader's event log).
    // With wait_ms > 0 and none yet, waits that long for the next one. Possible errors:
    // InvalidArgument (a negative field, wait_ms over 60 s, max_events over 1024),
    // ResourceExhausted (1024 calls wait already). A coordinator spawned without an event log
    // (muster::Leader always has one) answers at once with no events.
    caf::replies_to<proto::WatchEventsRequest>::with<proto::WatchEventsResponse>,
    // Internal: a barrier instance finished (and who had not arrived, when it failed).
    caf::reacts_to<barrier_done_atom, std::string, int64_t, caf::error, proto::BarrierInfo>,
    // Internal: time to look for stuck tasks.
    caf::reacts_to<progress_check_atom>,
    // Internal: time to look at an elastic job's settle deadline and waiting calls.
    caf::reacts_to<membership_atom, std::string>,
    // Internal: a task actor reports its new state.
    caf::reacts_to<task_state_atom, proto::CoordinatedTaskStateInfo,
                   AgentActor>>::extend_with<KvStoreActor>;

}  // namespace muster
