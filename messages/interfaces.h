// The typed actor interfaces of Muster. Every request and reply is a muster::proto message;
// each handler lists its possible errors (absl codes, see docs/protocol.md).
#pragma once

#include <caf/replies_to.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "muster/messages/atoms.h"
#include "muster/messages/proto_inspect.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

// The agent side of a task, as the leader sees it: the leader pushes errors to it.
using AgentActor = caf::typed_actor<caf::reacts_to<proto::ReportErrorToTaskRequest>>;

// The coordinator: the leader's published entry point. Requests are answered with the reply
// message or an error status (docs/protocol.md lists every error per request).
using CoordinatorActor = caf::typed_actor<
    // Registers a task and the agent actor that represents it.
    // Possible errors: InvalidArgument (unknown task), Aborted (restarted task, task in ERROR).
    caf::replies_to<proto::RegisterTaskRequest, AgentActor>::with<proto::RegisterTaskResponse>,
    // Possible errors: InvalidArgument (unknown or unregistered task), Aborted (task in ERROR or
    // restarted).
    caf::replies_to<proto::HeartbeatRequest>::with<proto::HeartbeatResponse>,
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
    // Internal: a task actor reports its new state.
    caf::reacts_to<task_state_atom, proto::CoordinatedTaskStateInfo, AgentActor>>;

}  // namespace muster
