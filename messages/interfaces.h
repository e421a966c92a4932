// The typed actor interfaces of Muster. Every request and reply is a muster::proto message;
// each handler lists its possible errors (absl codes, see docs/protocol.md).
#pragma once

#include <caf/replies_to.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "muster/messages/proto_inspect.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

// The agent side of a task, as the leader sees it: the leader pushes errors to it.
using AgentActor = caf::typed_actor<caf::reacts_to<proto::ReportErrorToTaskRequest>>;

// A key-value watcher: receives the changes of the keys it watches, in the order they happened.
using KvWatcherActor = caf::typed_actor<caf::reacts_to<proto::KeyValueChangeEvent>>;

// The coordinator: the leader's published entry point.
using CoordinatorActor = caf::typed_actor<
    // Registers a task and the agent actor that represents it.
    // Possible errors: InvalidArgument (unknown task), Aborted (restarted task, task in ERROR).
    caf::replies_to<proto::RegisterTaskRequest, AgentActor>::with<proto::RegisterTaskResponse>>;

}  // namespace muster
