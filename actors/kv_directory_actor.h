// A key-value directory actor owns every key whose first path segment is its directory name
// ("nccl", "nccl/id/3"): the values (kv_store.h), the GetKeyValue calls parked until their key
// appears, and the watches. The coordinator routes requests to it with normalised keys
// (kv_router.h); it still checks every key. Each operation costs O(log n) in its size.
//
//   SERVING --(exit message)--> STOPPED   (parked GetKeyValue calls fail with Cancelled)
#pragma once

#include <cstdint>
#include <string>

#include <absl/status/status.h>
#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>

#include "muster/actors/kv_key.h"
#include "muster/messages/atoms.h"
#include "muster/messages/interfaces.h"

namespace muster {

// Asks a directory for its counters: keys, parked gets, watches, monitored peers.
using kv_stats_atom = caf::atom_constant<caf::atom("kv_stats")>;

using KvDirectoryActor = caf::typed_actor<
    // Stores a value; wakes the getters of the key. Possible errors: AlreadyExists (no
    // payload), InvalidArgument, ResourceExhausted.
    caf::replies_to<proto::InsertKeyValueRequest>::with<proto::InsertKeyValueResponse>,
    // Replaces the value of an existing key. Possible errors: NotFound, InvalidArgument,
    // ResourceExhausted.
    caf::replies_to<proto::UpdateKeyValueRequest>::with<proto::UpdateKeyValueResponse>,
    // Answers once the key exists (timeout_in_ms > 0: DeadlineExceeded after that long).
    // Possible errors: DeadlineExceeded, Cancelled, InvalidArgument.
    caf::replies_to<proto::GetKeyValueRequest>::with<proto::GetKeyValueResponse>,
    // Possible errors: NotFound, InvalidArgument.
    caf::replies_to<proto::TryGetKeyValueRequest>::with<proto::TryGetKeyValueResponse>,
    // Possible errors: FailedPrecondition (not an integer), OutOfRange (overflow),
    // InvalidArgument, ResourceExhausted.
    caf::replies_to<proto::IncrementKeyValueRequest>::with<proto::IncrementKeyValueResponse>,
    // Lists "<dir>/..." in key order ("": every key of the directory).
    // Possible errors: InvalidArgument.
    caf::replies_to<proto::GetKeyValueDirRequest>::with<proto::GetKeyValueDirResponse>,
    // Deletes the key (and "<key>/..." with is_directory; "" with is_directory: every key).
    // Possible errors: InvalidArgument.
    caf::replies_to<proto::DeleteKeyValueRequest>::with<proto::DeleteKeyValueResponse>,
    // Possible errors: InvalidArgument, ResourceExhausted.
    caf::replies_to<proto::CompareAndSwapRequest>::with<proto::CompareAndSwapResponse>,
    // Sends the watcher a KeyValueChangeEvent per change of the key or of keys under it.
    // Possible errors: InvalidArgument.
    caf::replies_to<proto::WatchKeyRequest, KvWatcherActor>::with<proto::WatchKeyResponse>,
    // Stops a watch (a watch that does not exist is fine). Possible errors: InvalidArgument.
    caf::replies_to<proto::StopWatchKeyRequest, KvWatcherActor>::with<proto::StopWatchKeyResponse>,
    // Fails the sender's parked GetKeyValue calls on the key with Cancelled.
    caf::reacts_to<cancel_atom, std::string>,
    // Internal: the deadline of parked call `waiter_id` (accepted only from the actor itself).
    caf::reacts_to<deadline_atom, uint64_t>,
    // Counters for tests and operations: keys, parked gets, watches, monitored peers.
    caf::replies_to<kv_stats_atom>::with<int64_t, int64_t, int64_t, int64_t>>;

// Spawns the actor of `directory` (a first path segment) with the store limits `limits`.
KvDirectoryActor SpawnKvDirectory(caf::actor_system& system, std::string directory,
                                  KvLimits limits);

// Converts a key-value status to a CAF error: with a coordination payload, except
// AlreadyExists, which the reference returns bare.
caf::error ToKvError(const absl::Status& status);

}  // namespace muster
