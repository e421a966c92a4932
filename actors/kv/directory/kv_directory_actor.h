// A key-value directory actor owns every key whose first path segment is its directory name
// ("nccl", "nccl/id/3"): the values (kv_store.h), the GetKeyValue calls parked until their key
// appears, the WaitForKeys calls parked until their directory has enough keys, and the watches. The
// coordinator routes requests to it with normalised keys (kv_router.h); it still checks every key.
// Each operation costs O(log n) in its size. With a state dir (kv_durable.h) every change is
// recorded before a reply, a getter or a watcher learns of it, and a write re-sent with a known
// request id gets the reply of its first application.
//
//   SERVING --(exit message)--> STOPPED   (parked GetKeyValue calls fail with Cancelled)
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <absl/status/status.h>
#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>

#include "muster/actors/durability/state_writer_actor.h"
#include "muster/actors/kv/store/kv_key.h"
#include "muster/messages/vocabulary/atoms.h"
#include "muster/messages/vocabulary/interfaces.h"
#include "muster/proto/leader_state.pb.h"
#include "muster/proto/observe.pb.h"

namespace muster {

class LeaderMetrics;

// Asks a directory for its counters: keys, parked gets, watches, monitored peers.
using kv_stats_atom = caf::atom_constant<caf::atom("kv_stats")>;

// A directory actor answers the key-value requests (KvStoreActor, messages/vocabulary/interfaces.h)
// for the keys of one top-level directory, with the reference's codes (AlreadyExists without the
// coordination payload).
using KvDirectoryActor = KvStoreActor::extend<
    // Internal: the deadline of parked call `waiter_id` (accepted only from the actor itself).
    caf::reacts_to<deadline_atom, uint64_t>,
    // Internal: resumed watch `id` waited for the disk and starts now (only from the actor).
    caf::reacts_to<resume_watch_atom, uint64_t>,
    // An incarnation of a task ended (task name, incarnation): its ephemeral keys are deleted,
    // with a watch event each (sent by the coordinator).
    caf::reacts_to<drop_owner_atom, std::string, uint64_t>,
    // Counters for tests and operations: keys, parked gets, watches, monitored peers.
    caf::replies_to<kv_stats_atom>::with<int64_t, int64_t, int64_t, int64_t>,
    // Its size: keys, bytes, parked calls, watches (the leader's metrics and live page).
    caf::replies_to<proto::GetKvStatsRequest>::with<proto::KvDirectoryStats>>;

// A directory's durable state (a leader with a state dir): every change is recorded through
// `writer` before any reply reveals it; `recovered` (when set) is what the directory held
// before the leader restarted.
struct KvDurability {
  StateWriterActor writer;
  std::shared_ptr<const proto::RecoveredState> recovered;
  int directory_index = -1;  // in recovered->directories(); -1: nothing recovered
};

// Spawns the actor of `directory` (a first path segment) with the store limits `limits`.
// `metrics` (when set) counts every request and its latency.
KvDirectoryActor SpawnKvDirectory(caf::actor_system& system, std::string directory, KvLimits limits,
                                  const KvDurability& durability = {},
                                  std::shared_ptr<LeaderMetrics> metrics = nullptr);

// Converts a key-value status to a CAF error: with a coordination payload, except
// AlreadyExists, which the reference returns bare.
caf::error ToKvError(const absl::Status& status);

}  // namespace muster
