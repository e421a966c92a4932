// Task events for the leader's log: what changed between two snapshots of the task states
// (WatchJobState replies). Pure functions; the caller stamps and prints the lines. Changes
// that happen between two snapshots are seen as one (the latest state wins), except that a
// new incarnation always shows as a registration.
#pragma once

#include <string>
#include <vector>

#include "muster/proto/coordination_service.pb.h"

namespace muster::cli {

enum class TaskEventKind {
  kRegistered,    // the task is CONNECTED (again, with a new incarnation)
  kStale,         // ERROR after a missed heartbeat deadline
  kFailed,        // ERROR for any other reason (connection lost, reported error, ...)
  kDisconnected,  // DISCONNECTED (shut down, or reset after an error)
};

struct TaskEvent {
  TaskEventKind kind;
  proto::CoordinatedTaskStateInfo info;  // the task's new state
};

// "registered", "stale", "failed", "disconnected".
const char* TaskEventName(TaskEventKind kind);

// The events that lead from `before` to `after`, in task order. A task with a new incarnation
// that is no longer CONNECTED gives a registered event before its current one.
std::vector<TaskEvent> DiffTaskStates(const proto::WatchJobStateResponse& before,
                                      const proto::WatchJobStateResponse& after);

// "/job:worker/task:0 registered incarnation=0x00000000000000ff",
// "/job:worker/task:1 failed: UNAVAILABLE: ...".
std::string FormatTaskEvent(const TaskEvent& event);

// "CONNECTED" for TASKSTATE_CONNECTED.
std::string StateName(proto::CoordinatedTaskState state);

// "0x00000000000000ff"; "-" for 0 (never registered).
std::string FormatIncarnation(uint64_t incarnation);

// "UNAVAILABLE: <message>"; "" when the task has no error.
std::string FormatTaskError(const proto::CoordinatedTaskStateInfo& info);

}  // namespace muster::cli
