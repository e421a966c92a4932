// The job watch: follows the task states of a job through WatchJobState long polls and hands
// every new snapshot to a listener (a blocking actor in the command's main thread, which
// prints). It never blocks: one poll is in flight at a time, answered when the job changes.
//
//   POLLING --snapshot--> tell listener, POLLING (asks again with the snapshot's version)
//      |--error reply | coordinator down--> tell listener (watch_failed_atom), STOPPED
#pragma once

#include <string>

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/typed_actor.hpp>

#include "muster/messages/vocabulary/interfaces.h"

namespace muster::cli {

// Asks the coordinator for the next snapshot.
using poll_atom = caf::atom_constant<caf::atom("poll")>;
// (watch_failed_atom, error): the watch stopped; the error says why.
using watch_failed_atom = caf::atom_constant<caf::atom("watchfail")>;

using JobWatchListener = caf::typed_actor<caf::reacts_to<proto::WatchJobStateResponse>,
                                          caf::reacts_to<watch_failed_atom, caf::error>>;

using JobWatchActor = caf::typed_actor<caf::reacts_to<poll_atom>>;

// Spawns a watch of `job` (every job when empty). The first snapshot arrives at once; then one
// per change. Stop it with an exit message.
JobWatchActor SpawnJobWatch(caf::actor_system& system, CoordinatorActor coordinator,
                            std::string job, JobWatchListener listener);

}  // namespace muster::cli
