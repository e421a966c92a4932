// The job observer takes snapshots of the job (proto::JobSnapshot) for the leader's HTTP
// endpoint: every task's state with its heartbeat age and step, the open barriers, the size of
// every key-value directory and the latest events. It asks the coordinator the requests any
// admitted client could send (GetTaskColumns, GetBarriers, GetKvStats, WatchEvents), so it needs
// nothing of the coordinator's insides and the coordinator answers it between other requests.
// A snapshot is taken only when one is asked for and the last one is older than `max_age`: a
// leader nobody watches does nothing, and any number of scrapers and pages share one snapshot
// per `max_age`. The HTTP threads wait for its answer (JobObserverClient); no actor ever waits.
//
//   IDLE --snapshot, cached one fresh--> IDLE (answered with it)
//   IDLE --snapshot, none or too old--> COLLECTING (asks the coordinator)
//   COLLECTING --snapshot--> COLLECTING (answered with the snapshot being taken)
//   COLLECTING --every answer in--> IDLE (answers every waiter; an error answers them with it)
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/typed_actor.hpp>

#include "muster/messages/vocabulary/interfaces.h"
#include "muster/proto/observe.pb.h"

namespace muster {

// Snapshots are immutable once taken: readers on any thread share them.
using JobSnapshotPtr = std::shared_ptr<const proto::JobSnapshot>;

}  // namespace muster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(muster::JobSnapshotPtr)

namespace muster {

using snapshot_atom = caf::atom_constant<caf::atom("snapshot")>;

// Possible errors: those of the coordinator's requests (Aborted or a lost coordinator when the
// leader stops).
using JobObserverActor = caf::typed_actor<caf::replies_to<snapshot_atom>::with<JobSnapshotPtr>>;

struct ObserverOptions {
  uint64_t leader_incarnation = 0;
  // A snapshot younger than this is served again instead of taking a new one.
  caf::timespan max_age = std::chrono::milliseconds(500);
  // The wall time when the observer starts (Unix ms): a snapshot's wall time is this plus the
  // actor clock's time since then.
  int64_t start_unix_ms = 0;
  // The newest events a snapshot keeps.
  int recent_events = 50;
};

JobObserverActor SpawnJobObserver(caf::actor_system& system, CoordinatorActor coordinator,
                                  ObserverOptions options);

}  // namespace muster
