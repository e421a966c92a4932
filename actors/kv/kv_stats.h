// The sizes of every key-value directory, for the leader's metrics and live page: the owner of
// a KvRouter asks each directory actor for its KvDirectoryStats and answers with all of them.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include <caf/typed_response_promise.hpp>

#include "muster/actors/kv/kv_directory_actor.h"
#include "muster/proto/observe.pb.h"

namespace muster {

// Asks every directory in `directories` for its size and returns a promise of all of them,
// ordered by directory; directories that are gone are skipped. Call it from a handler of `self`
// and return the promise.
template <class Self>
caf::typed_response_promise<proto::GetKvStatsResponse> CollectKvStats(
    Self* self, const std::vector<KvDirectoryActor>& directories) {
  struct Collection {
    caf::typed_response_promise<proto::GetKvStatsResponse> promise;
    proto::GetKvStatsResponse merged;
    size_t left = 0;
    void Done() {
      if (--left > 0) return;
      auto* dirs = merged.mutable_directories();
      std::sort(dirs->begin(), dirs->end(),
                [](const auto& a, const auto& b) { return a.directory() < b.directory(); });
      promise.deliver(std::move(merged));
    }
  };
  auto collection = std::make_shared<Collection>();
  collection->promise = self->template make_response_promise<proto::GetKvStatsResponse>();
  collection->left = directories.size() + 1;
  for (const KvDirectoryActor& directory : directories) {
    self->request(directory, caf::infinite, proto::GetKvStatsRequest())
        .then(
            [collection](proto::KvDirectoryStats& stats) {
              *collection->merged.add_directories() = std::move(stats);
              collection->Done();
            },
            [collection](caf::error&) { collection->Done(); });
  }
  collection->Done();  // the `+ 1` above: answers at once when there are no directories
  return collection->promise;
}

}  // namespace muster
