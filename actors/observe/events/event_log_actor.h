// The event log actor: the leader's record of what happened to its job. The coordinator sends
// it one JobEvent per thing that happened (a task registered or failed, a barrier passed, a
// round started, ...); it stamps each with the next seq and its clock's time, keeps the last
// 4096 (EventLog), answers WatchEvents (delegated to it by the coordinator), and, with an event
// file, hands each event's JSON line to the event writer (event_writer_actor.h), one batch in
// flight at a time: the lines of the events that arrive meanwhile travel together in the next.
//
//   WatchEvents: events after after_seq kept --> answered at once
//                none yet, wait_ms > 0      --> PARKED --next event--> answered with it
//                                                      --wait_ms passed--> answered empty
//   exit message --> parked calls answered (empty), lines still pending written --> STOPPED
#pragma once

#include <cstddef>
#include <cstdint>

#include <absl/time/time.h>
#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "muster/actors/observe/events/event_log.h"
#include "muster/actors/observe/events/event_writer_actor.h"
#include "muster/messages/vocabulary/atoms.h"
#include "muster/messages/vocabulary/proto_inspect.h"
#include "muster/proto/observe.pb.h"

namespace muster {

using EventLogActor = caf::typed_actor<
    // An event of an actor of this process (the coordinator): stamped and kept. Its seq, times
    // are the log's; an event from another node is dropped.
    caf::reacts_to<proto::JobEvent>,
    // The events after after_seq (see proto/observe.proto). An after_seq ahead of the log (a
    // reader of an earlier leader) is answered at once, with no events and the log's last_seq.
    // Possible errors: InvalidArgument (a negative after_seq, wait_ms or max_events, a wait_ms
    // over 60 s or a max_events over 1024), ResourceExhausted (1024 calls wait already).
    caf::replies_to<proto::WatchEventsRequest>::with<proto::WatchEventsResponse>,
    // Internal: the wait of a parked call (by its number) is over; only the actor's own timer.
    caf::reacts_to<deadline_atom, uint64_t>>;

// The most WatchEvents calls that wait at once.
inline constexpr size_t kMaxParkedWatches = 1024;
// The most bytes of JSON lines that wait for the writer; the lines of later events are not
// written (and stderr says how many) until it caught up.
inline constexpr size_t kMaxPendingEventBytes = size_t{8} << 20;

struct EventLogOptions {
  // The wall time when the actor starts: event times are this plus the actor clock's time
  // since then (EventLog). muster::Leader gives absl::Now().
  absl::Time wall_start = absl::UnixEpoch();
  // Appends each event's JSON line to the event file; null: the events stay in memory only.
  EventWriterActor writer;
  size_t capacity = kEventLogCapacity;
};

// Spawns an event log. It stops on an exit message, after the writer wrote every line the log
// handed it (the writer is stopped then too).
EventLogActor SpawnEventLog(caf::actor_system& system, EventLogOptions options);

}  // namespace muster
