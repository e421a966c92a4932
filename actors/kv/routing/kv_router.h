// The coordinator's part of the key-value store: it normalises and checks each request once,
// maps the key's first path segment to its directory actor (spawned on first use through the
// coordinator's callback) and hands the request on without waiting. Requests that span the
// root go to a fresh fan-out actor (kv_fanout_actor.h). RouteKvRequest is the whole recipe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <absl/container/btree_map.h>
#include <absl/container/flat_hash_map.h>
#include <absl/status/statusor.h>
#include <caf/result.hpp>

#include "muster/actors/kv/directory/kv_directory_actor.h"
#include "muster/actors/kv/routing/kv_fanout_actor.h"
#include "muster/actors/kv/store/kv_key.h"
#include "muster/messages/vocabulary/kv_calls.h"

namespace muster {

class KvRouter {
 public:
  // Spawns the actor of a directory; the coordinator also monitors it.
  using SpawnFn =
      std::function<KvDirectoryActor(const std::string& directory, const KvLimits& limits)>;

  KvRouter() = default;
  KvRouter(KvLimits limits, SpawnFn spawn);

  // Normalise the request's key in place, check it (and the value), and return the directory
  // actor that owns the key, spawning it on first use.
  // Possible errors: InvalidArgument (empty or too long key; a watch of the root; no spawn
  // function), ResourceExhausted (value too large).
  absl::StatusOr<KvDirectoryActor> Route(proto::InsertKeyValueRequest& request);
  absl::StatusOr<KvDirectoryActor> Route(proto::UpdateKeyValueRequest& request);
  absl::StatusOr<KvDirectoryActor> Route(proto::GetKeyValueRequest& request);
  // Any other request that names one key (`key`) with nothing more to check: TryGetKeyValue,
  // IncrementKeyValue, and a new verb of that kind without a line here.
  template <class Request>
  requires requires(Request& r) { *r.mutable_key() = std::string(); }
  absl::StatusOr<KvDirectoryActor> Route(Request& request) {
    return RouteKey(*request.mutable_key());
  }
  absl::StatusOr<KvDirectoryActor> Route(proto::GetKeyValueDirRequest& request);
  absl::StatusOr<KvDirectoryActor> Route(proto::DeleteKeyValueRequest& request);
  absl::StatusOr<KvDirectoryActor> Route(proto::CompareAndSwapRequest& request);
  absl::StatusOr<KvDirectoryActor> Route(proto::WatchKeyRequest& request);
  absl::StatusOr<KvDirectoryActor> Route(proto::StopWatchKeyRequest& request);
  // Also InvalidArgument for the root (these name one directory) and, for WaitForKeys, a count
  // or timeout out of range.
  absl::StatusOr<KvDirectoryActor> Route(proto::ReduceKeyValueDirRequest& request);
  absl::StatusOr<KvDirectoryActor> Route(proto::WaitForKeysRequest& request);

  // Normalises the request's key in place and returns true when the request spans the root:
  // GetKeyValueDir of the root, DeleteKeyValue of the root with is_directory.
  static bool SpansRoot(proto::GetKeyValueDirRequest& request);
  static bool SpansRoot(proto::DeleteKeyValueRequest& request);
  // FailedPrecondition for a delete of the whole store without delete_root.
  static absl::Status RootDeleteRefused();

  // The actor of `directory` (a first path segment), spawned when it has none yet.
  // Possible errors: as Route.
  absl::StatusOr<KvDirectoryActor> Open(const std::string& directory) {
    return FindOrSpawn(directory);
  }
  // Returns the existing directory actor owning `key` (any form); never spawns.
  std::optional<KvDirectoryActor> Find(const std::string& key) const;
  // Every directory actor, in directory name order.
  std::vector<KvDirectoryActor> Directories() const;
  // Forgets a directory actor that went down (the next request spawns a fresh one); returns
  // false for other actors.
  bool Forget(const caf::actor_addr& actor);

  const KvLimits& limits() const { return limits_; }
  size_t num_directories() const { return directories_.size(); }

 private:
  // Normalises `key` in place and checks it.
  absl::Status PrepareKey(std::string& key) const;
  // Normalises `key` in place, checks it and returns its directory actor.
  absl::StatusOr<KvDirectoryActor> RouteKey(std::string& key);
  absl::StatusOr<KvDirectoryActor> RouteEntry(proto::KeyValueEntry& kv);
  absl::StatusOr<KvDirectoryActor> RouteWatch(std::string& key);
  // A request that names one directory, never the root (`call` names it in the error).
  absl::StatusOr<KvDirectoryActor> RouteDirectory(std::string& key, absl::string_view call);
  // ResourceExhausted when a new directory would exceed limits_.max_directories.
  absl::StatusOr<KvDirectoryActor> FindOrSpawn(const std::string& directory);

  KvLimits limits_;
  SpawnFn spawn_;
  absl::btree_map<std::string, KvDirectoryActor> directories_;
  absl::flat_hash_map<caf::actor_addr, std::string> names_;
};

namespace kv_internal {
// Declared only, to name the response type of each request (see KvResponse): the calls of
// MUSTER_KV_CALLS (kv_calls.h), and the watches.
template <class Request>
KvCallResponse<Request> ResponseOf(const Request&);
proto::WatchKeyResponse ResponseOf(const proto::WatchKeyRequest&);
proto::StopWatchKeyResponse ResponseOf(const proto::StopWatchKeyRequest&);
}  // namespace kv_internal

// The response type of a key-value request type.
template <class Request>
using KvResponse = decltype(kv_internal::ResponseOf(std::declval<const Request&>()));

// Routes a key-value request received by the actor `self` (the coordinator, or any actor that
// owns `router`): a root-spanning request is delegated to a fresh fan-out actor, any other to
// the directory that owns its key, with its key normalised; bad requests are answered at once.
// `extra` is the watcher of WatchKey / StopWatchKey. The reply goes straight to the requester.
template <class Self, class Request, class... Extra>
caf::result<KvResponse<Request>> RouteKvRequest(Self* self, KvRouter& router, Request request,
                                                Extra&&... extra) {
  if constexpr (std::is_same_v<Request, proto::GetKeyValueDirRequest> ||
                std::is_same_v<Request, proto::DeleteKeyValueRequest>) {
    if (KvRouter::SpansRoot(request)) {
      if constexpr (std::is_same_v<Request, proto::DeleteKeyValueRequest>) {
        if (!request.delete_root()) return ToKvError(KvRouter::RootDeleteRefused());
      }
      return self->delegate(SpawnKvFanOut(self->system(), router.Directories()),
                            std::move(request));
    }
  }
  absl::StatusOr<KvDirectoryActor> directory = router.Route(request);
  if (!directory.ok()) return ToKvError(directory.status());
  return self->delegate(*directory, std::move(request), std::forward<Extra>(extra)...);
}

// Routes the withdrawal of the sender's blocked GetKeyValue calls on `key` (cancel_atom, key)
// to the key's directory, keeping the original sender; a directory never used has nothing to
// withdraw.
template <class Self>
void RouteKvCancel(Self* self, const KvRouter& router, const std::string& key) {
  if (std::optional<KvDirectoryActor> directory = router.Find(key)) {
    self->delegate(*directory, cancel_atom::value, NormalizeKey(key));
  }
}

}  // namespace muster
