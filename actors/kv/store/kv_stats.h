// The sizes of every key-value directory, for the leader's metrics and live page: the owner of
// a KvRouter asks each directory actor for its KvDirectoryStats and answers with all of them.
#pragma once

#include <algorithm>
#include <vector>

#include <caf/typed_response_promise.hpp>

#include "muster/actors/fan_in.h"
#include "muster/actors/kv/directory/kv_directory_actor.h"
#include "muster/proto/observe.pb.h"

namespace muster {

// Asks every directory in `directories` for its size and returns a promise of all of them,
// ordered by directory; directories that are gone are skipped. Call it from a handler of `self`
// and return the promise.
template <class Self>
caf::typed_response_promise<proto::GetKvStatsResponse> CollectKvStats(
    Self* self, const std::vector<KvDirectoryActor>& directories) {
  return FanIn<proto::GetKvStatsResponse, proto::KvDirectoryStats>(
      self, directories, proto::GetKvStatsRequest(),
      [](proto::GetKvStatsResponse& merged, proto::KvDirectoryStats& stats) {
        *merged.add_directories() = std::move(stats);
      },
      [](proto::GetKvStatsResponse& merged) {
        auto* dirs = merged.mutable_directories();
        std::sort(dirs->begin(), dirs->end(),
                  [](const auto& a, const auto& b) { return a.directory() < b.directory(); });
      });
}

}  // namespace muster
