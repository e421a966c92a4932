// Atoms for Muster's internal, non-protobuf messages (timers and control).
#pragma once

#include <caf/atom.hpp>

namespace muster {

using retry_atom = caf::atom_constant<caf::atom("retry")>;
using deadline_atom = caf::atom_constant<caf::atom("deadline")>;
// A heartbeat is due (agent timer).
using beat_atom = caf::atom_constant<caf::atom("beat")>;
// The heartbeat monitor starts / stops watching a connected task's deadline.
using hb_watch_atom = caf::atom_constant<caf::atom("hb_watch")>;
using hb_unwatch_atom = caf::atom_constant<caf::atom("hb_unwatch")>;
// A heartbeat batcher sends the beats it gathered.
using flush_atom = caf::atom_constant<caf::atom("flush")>;
// A task actor reports its new state to the coordinator.
using task_state_atom = caf::atom_constant<caf::atom("taskstate")>;
// Something happened to a task that its task actor must act on (muster::TaskEvent).
using task_event_atom = caf::atom_constant<caf::atom("taskevent")>;
// Withdraws the sender's pending request on a key (e.g. a blocked GetKeyValue).
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
// Asks an agent for its state.
using agent_state_atom = caf::atom_constant<caf::atom("agentstate")>;
// A barrier instance finished: (barrier_done_atom, id, counter, result) to its parent.
using barrier_done_atom = caf::atom_constant<caf::atom("barr_done")>;
// Registration through the register barrier: join it (pending), then connect once it passed.
using reg_join_atom = caf::atom_constant<caf::atom("reg_join")>;
// A task's process exited on its own (its launcher said so): the task fails unless it is
// already in ERROR.
using exited_atom = caf::atom_constant<caf::atom("exited")>;
// The coordinator checks the steps of connected tasks for stuck ones (its own timer).
using progress_check_atom = caf::atom_constant<caf::atom("progcheck")>;
// An incarnation of a task ended: its ephemeral keys are deleted (task name, incarnation).
using drop_owner_atom = caf::atom_constant<caf::atom("dropowner")>;
// Agent::ReachedSyncPoint when the job is being preempted: is this step the sync step?
using sync_point_atom = caf::atom_constant<caf::atom("syncpoint")>;
// A batch of durable-state changes for the state writer (group commit).
using persist_atom = caf::atom_constant<caf::atom("persist")>;
// A resumed watch that waited for the disk starts now (a directory's message to itself).
using resume_watch_atom = caf::atom_constant<caf::atom("resumewtch")>;
// The coordinator looks at an elastic job's settle deadline and waiting calls (its own timer).
using membership_atom = caf::atom_constant<caf::atom("membership")>;

}  // namespace muster
