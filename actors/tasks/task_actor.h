// The task actor: owns the state of one configured task /job:<name>/task:<i> and answers the
// requests that concern that task alone. While the task is connected, the heartbeat monitor
// (linked to the coordinator) holds its deadline and answers its regular heartbeats; the task
// actor answers the others. A missed heartbeat deadline, a lost connection to the agent, a
// restarted incarnation or an error reported by the task kill the task actor with that status,
// and the coordinator (its supervisor) records the failure, applies the supervision policy and
// starts the task actor again in ERROR.
//
// With the register barrier, a registration first joins (the task stays DISCONNECTED, its
// pending incarnation and agent are kept, no heartbeat deadline runs) and connects when the
// barrier passes. A newer incarnation that joins replaces the pending one; the older call then
// gets AlreadyExists. An agent lost while joining fails the task when the barrier passes.
//
//   DISCONNECTED --Register------------------------> CONNECTED --Shutdown/Reset--> DISCONNECTED
//     |                                             ^   |  (deadline watched, agent monitored)
//     +--RegisterJoin--> JOINING --RegisterDone-----+   +--missed heartbeat | agent lost |
//                        (pending incarnation;          |  new incarnation | ReportError | stuck
//                         a newer join replaces it)     v  --> dies; restarted in ERROR
//   DISCONNECTED <--Reset/Shutdown-- ERROR <--kSetError (imposed by the coordinator)
//   DISCONNECTED | CONNECTED --exited (its launcher saw the process exit)--> dies
//   any --kDisconnect (shutdown barrier passed; a restart ordered by the policy)--> DISCONNECTED
//   (leader restarted) CONNECTED, awaiting its agent --Register(same incarnation)--> CONNECTED
//                                                    --reconnect window over--> dies
// A registration with `reconnect` set is accepted only by a CONNECTED task of the same
// incarnation (FailedPrecondition otherwise: the leader lost or never had the task's state).
#pragma once

#include <cstddef>
#include <cstdint>

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include "muster/messages/vocabulary/atoms.h"
#include "muster/messages/vocabulary/interfaces.h"

namespace muster {

// The longest message an error reported by a task (ReportErrorToService) keeps; the rest is cut
// (CutText), so that one report cannot make the leader write and push megabytes to every task.
inline constexpr size_t kMaxReportedErrorBytes = 16384;

// What the coordinator, the heartbeat monitor or the task actor's own timers tell a task actor,
// with an incarnation and an error where the event has them. (One message for all of them: a
// handler costs every task actor about 40 bytes.)
enum class TaskEvent : uint8_t {
  // The coordinator sets the task to ERROR with `error` (propagation, a failed register or
  // shutdown barrier); the first error sticks.
  kSetError,
  // The coordinator disconnects the task (the shutdown barrier passed; a restart was ordered).
  kDisconnect,
  // The heartbeat monitor saw the deadline of `incarnation` pass: the task fails (Unavailable).
  kHeartbeatDeadline,
  // The coordinator found `incarnation` stuck: the task fails with `error` (DeadlineExceeded
  // with a TaskStuck payload) unless it is no longer that incarnation.
  kStuck,
  // Own timer: the agent watched as `incarnation` (a count of watches) stayed unreachable for
  // the whole connection-loss grace period.
  kAgentLost,
  // Own timer: the reconnect window of `incarnation` after a leader restart is over.
  kReconnectOver,
};

// What a task actor tells its supervisor after every state change.
// A task actor registering through the register barrier arrives at it itself.
using TaskParentActor =
    caf::typed_actor<caf::reacts_to<task_state_atom, proto::CoordinatedTaskStateInfo, AgentActor>,
                     caf::replies_to<proto::BarrierRequest>::with<proto::BarrierResponse>>;

using TaskActor = caf::typed_actor<
    // Possible errors: Aborted (other incarnation while connected; task in ERROR).
    caf::replies_to<proto::RegisterTaskRequest, AgentActor>::with<proto::RegisterTaskResponse>,
    // Registers through the register barrier (the BarrierRequest of the task's arrival): the
    // incarnation becomes pending, the task actor arrives at the barrier, and once it passed
    // connects the incarnation and answers. Errors as RegisterTask, then the barrier's own
    // errors, AlreadyExists (a newer incarnation joined meanwhile), Unavailable (its agent was
    // lost meanwhile), Aborted (the task failed meanwhile).
    caf::replies_to<reg_join_atom, proto::RegisterTaskRequest, AgentActor,
                    proto::BarrierRequest>::with<proto::RegisterTaskResponse>,
    // Possible errors: Aborted (task in ERROR, incarnation mismatch), InvalidArgument (not
    // registered, or disconnected longer than the grace period).
    caf::replies_to<proto::HeartbeatRequest>::with<proto::HeartbeatResponse>,
    // Possible errors: FailedPrecondition (already disconnected).
    caf::replies_to<proto::ShutdownTaskRequest>::with<proto::ShutdownTaskResponse>,
    // Possible errors: FailedPrecondition (already disconnected).
    caf::replies_to<proto::ResetTaskRequest>::with<proto::ResetTaskResponse>,
    // Possible errors: FailedPrecondition (not connected, or already in ERROR).
    caf::replies_to<proto::ReportErrorToServiceRequest>::with<proto::ReportErrorToServiceResponse>,
    // The task's process exited on its own: the task fails with `error` (true), unless it is
    // in ERROR already (false).
    caf::replies_to<exited_atom, caf::error>::with<bool>,
    // See TaskEvent: (event, incarnation, error).
    caf::reacts_to<task_event_atom, TaskEvent, uint64_t, caf::error>>;

// Tells `task` of `event` (see TaskEvent for which take an incarnation or an error).
template <class Self>
void SendTaskEvent(Self* self, const TaskActor& task, TaskEvent event, uint64_t incarnation = 0,
                   caf::error error = caf::error()) {
  self->send(task, task_event_atom::value, event, incarnation, std::move(error));
}

struct TaskSpec {
  proto::CoordinatedTask task;
  uint64_t leader_incarnation = 0;
  caf::timespan heartbeat_timeout{0};
  // How long a lost connection to the agent is tolerated before the task fails (0: at once).
  caf::timespan connection_loss_grace{0};
  bool recoverable = false;
  // The state to start in: DISCONNECTED at leader start, ERROR after a failure; CONNECTED
  // (without an agent) when a restarted leader recovered the task connected.
  proto::CoordinatedTaskStateInfo initial;
  // With a CONNECTED initial state: how long the task's agent has to register again
  // (RegisterTaskRequest.reconnect) before the task fails with Unavailable.
  caf::timespan reconnect_window{0};
  // Told to the agent with its registration (RegisterTaskResponse.direct_port); 0: none.
  uint16_t direct_port = 0;
  TaskParentActor parent;
};

TaskActor SpawnTaskActor(caf::actor_system& system, TaskSpec spec);

}  // namespace muster
