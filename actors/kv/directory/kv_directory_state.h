// The key-value directory actor's state (kv_directory_actor.h), shared by the files that make up
// its behaviour: kv_directory_actor.cc (keys, parked gets and waits, the behaviour) and
// kv_directory_watches.cc (watches, and their resuming from a revision). Internal to actors/kv.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <absl/container/flat_hash_map.h>
#include <caf/actor_addr.hpp>
#include <caf/result.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "muster/actors/durability/kv_durable.h"
#include "muster/actors/kv/directory/kv_directory_actor.h"
#include "muster/actors/kv/store/kv_store.h"
#include "muster/actors/kv/directory/kv_subscribers.h"
#include "muster/actors/observe/leader_metrics.h"

namespace muster::kv_directory_internal {

// A resumed watch waiting for the disk (kv_durable.h).
struct ResumingWatch {
  caf::typed_response_promise<proto::WatchKeyResponse> promise;
  proto::WatchKeyRequest request;
  KvWatcherActor watcher;
};

struct KvDirectoryState {
  static inline const char* name = "muster.kv_directory";
  KvStore store{"", KvLimits()};
  KvSubscribers subscribers;
  KvDurable durable;
  absl::flat_hash_map<uint64_t, ResumingWatch> resuming;
  uint64_t next_resume = 0;
  std::shared_ptr<LeaderMetrics> metrics;  // null: nothing counted
};

using KvDirectoryPointer = KvDirectoryActor::stateful_pointer<KvDirectoryState>;

// kv_directory_actor.cc: stops monitoring `peer` once it waits for nothing and watches nothing.
void ReleasePeer(KvDirectoryPointer self, const caf::actor_addr& peer);

// kv_directory_watches.cc. A watch that resumes (from_revision) while changes are on their way
// to disk starts once they are there, in a resume_watch_atom of its own (ResumeWatch).
caf::result<proto::WatchKeyResponse> WatchKey(KvDirectoryPointer self,
                                              const proto::WatchKeyRequest& request,
                                              const KvWatcherActor& watcher);
void ResumeWatch(KvDirectoryPointer self, uint64_t id);
caf::result<proto::StopWatchKeyResponse> StopWatchKey(KvDirectoryPointer self,
                                                      const proto::StopWatchKeyRequest& request,
                                                      const KvWatcherActor& watcher);

}  // namespace muster::kv_directory_internal
