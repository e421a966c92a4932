// A short-lived actor for key-value requests that span the root: GetKeyValueDir of "" (every
// key) and DeleteKeyValue of "" with is_directory (every key). It asks every directory actor,
// merges the answers (in key order) and answers the original requester, so the coordinator
// never waits. It serves one request, then quits. Directories are asked one request each and
// answer independently, so a root request is not atomic across directories.
//
//   IDLE --request--> ASKING --all answered | first error--> (answers, quits)
#pragma once

#include <vector>

#include <caf/actor_system.hpp>

#include "muster/actors/kv/directory/kv_directory_actor.h"

namespace muster {

using KvFanOutActor = caf::typed_actor<
    // Every key of every directory, in key order. Possible errors: InvalidArgument (not the
    // root), the first error of a directory (e.g. Unavailable when one stopped).
    caf::replies_to<proto::GetKeyValueDirRequest>::with<proto::GetKeyValueDirResponse>,
    // Deletes every key of every directory. Possible errors: InvalidArgument (not the root or
    // not is_directory), the first error of a directory.
    caf::replies_to<proto::DeleteKeyValueRequest>::with<proto::DeleteKeyValueResponse>>;

// Spawns a fan-out actor over `directories`.
KvFanOutActor SpawnKvFanOut(caf::actor_system& system, std::vector<KvDirectoryActor> directories);

}  // namespace muster
