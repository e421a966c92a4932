// The heartbeat monitor: one actor, linked to the coordinator, that holds the liveness deadline
// of every connected task and answers their heartbeats. The coordinator routes each heartbeat
// (or batch of heartbeats) here with the task's slot (its dense index of the configured task)
// and the task's actor; a beat of a watched task with
// the registered incarnation moves its deadline to now + timeout and is answered at once. Any
// other beat (task not connected, other incarnation) goes to the task actor, which owns the
// task's state and answers with the reference's errors. When a deadline passes without a beat,
// the monitor tells the task actor (TaskEvent::kHeartbeatDeadline, incarnation); the task actor
// fails with Unavailable "heartbeat timeout" and the coordinator applies the supervision policy.
//
// Deadlines all use one timeout, so they are ordered as the beats arrive: a FIFO of (task,
// sequence number, deadline) with lazy deletion and a single timer on its oldest live entry.
// A beat costs O(1) and no message; a timer fires about once per timeout, not once per beat.
// A timer that fires more than a quarter timeout late (this process was stopped or starved)
// defers the verdict by a quarter timeout, once: the beats that waited during the stall are
// read first, and the leader's own silence is not the tasks' fault.
//
//   per task:  UNWATCHED --hb_watch--> WATCHED --beat--> WATCHED (deadline = now + timeout)
//                  ^                      |
//                  +----hb_unwatch--------+--deadline passed--> task actor told; UNWATCHED
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include <caf/typed_actor.hpp>

#include "muster/actors/tasks/task_actor.h"
#include "muster/messages/vocabulary/atoms.h"
#include "muster/messages/vocabulary/interfaces.h"

namespace muster {

// The slot of a task the coordinator does not know.
inline constexpr uint32_t kNoTaskSlot = std::numeric_limits<uint32_t>::max();

using HeartbeatMonitorActor = caf::typed_actor<
    // One heartbeat, its task's slot and task actor (which answers what the monitor cannot).
    caf::replies_to<proto::HeartbeatRequest, uint32_t, TaskActor>::with<proto::HeartbeatResponse>,
    // The same beat sent one-way by `agent`: nothing is answered; a beat the task actor refuses
    // has its error pushed to `agent` (ReportErrorToTaskRequest).
    caf::reacts_to<proto::HeartbeatRequest, uint32_t, TaskActor, AgentActor>,
    // A batch: slots[i] and actors[i] belong to beats[i]; kNoTaskSlot for an unknown task (its
    // failure is InvalidArgument). Never fails as a whole.
    caf::replies_to<proto::HeartbeatBatchRequest, std::vector<uint32_t>,
                    std::vector<TaskActor>>::with<proto::HeartbeatBatchResponse>,
    // The task in this slot connected with this incarnation: its deadline is now + timeout.
    caf::reacts_to<hb_watch_atom, uint32_t, uint64_t, TaskActor>,
    // The task in this slot left CONNECTED: no deadline any more.
    caf::reacts_to<hb_unwatch_atom, uint32_t>,
    // Timer: the oldest deadline is due.
    caf::reacts_to<deadline_atom>>;

// Spawns the monitor, linked to `owner` (the coordinator).
HeartbeatMonitorActor SpawnHeartbeatMonitor(caf::local_actor* owner, uint64_t leader_incarnation,
                                            caf::timespan timeout);

}  // namespace muster
