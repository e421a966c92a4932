// One builder per key-value verb: the request the C++ Agent, the Python binding, the muster
// command and the benchmarks send, from the caller's arguments. A timeout of
// absl::InfiniteDuration() is "no timeout" (wire_timeouts.h encodes it). The agent fills in the
// source task and the request id when it sends a request; the builders never do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <absl/time/time.h>

#include "muster/proto/coordination_service.pb.h"

namespace muster::requests {

// Waits until `key` exists, at most `timeout`.
proto::GetKeyValueRequest GetKeyValue(const std::string& key,
                                      absl::Duration timeout = absl::InfiniteDuration());
proto::TryGetKeyValueRequest TryGetKeyValue(const std::string& key);
// Every key under `directory` ("": the whole store).
proto::GetKeyValueDirRequest GetKeyValueDir(const std::string& directory);
proto::InsertKeyValueRequest InsertKeyValue(const std::string& key, const std::string& value,
                                            bool allow_overwrite, bool ephemeral = false);
proto::UpdateKeyValueRequest UpdateKeyValue(const std::string& key, const std::string& value,
                                            bool ephemeral = false);
// `recursive`: also every key under key/; `delete_root`: allows deleting the whole store.
proto::DeleteKeyValueRequest DeleteKeyValue(const std::string& key, bool recursive,
                                            bool delete_root = false);
proto::IncrementKeyValueRequest IncrementKeyValue(const std::string& key, int64_t delta);
// `expected`: the value the key must have, or nullopt: the key must not exist.
proto::CompareAndSwapRequest CompareAndSwap(const std::string& key,
                                            const std::optional<std::string>& expected,
                                            const std::string& desired, bool ephemeral = false);
// From `from_revision` (0: from now on).
proto::WatchKeyRequest WatchKey(const std::string& key, int64_t from_revision = 0);
proto::StopWatchKeyRequest StopWatchKey(const std::string& key);
proto::ReduceKeyValueDirRequest ReduceKeyValueDir(const std::string& directory, proto::ReduceOp op);
// Waits until `directory` holds `count` keys, at most `timeout` (a finite one at least 1 ms).
proto::WaitForKeysRequest WaitForKeys(const std::string& directory, int64_t count,
                                      absl::Duration timeout = absl::InfiniteDuration());

}  // namespace muster::requests
