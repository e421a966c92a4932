// The data of one key-value directory, without actors: an ordered map from normalised key to
// value, so that directory reads and deletes are range scans (O(log n) per operation), and the
// directory's revision, which every change bumps. Each mutation appends its changes (one per
// key) so that the owning actor (kv_directory_actor.h) can notify watchers and wake getters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <absl/container/btree_map.h>
#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>

#include "muster/actors/kv/kv_key.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

class KvStore {
 public:
  // Changes in the order they happened; watched_key is left empty.
  using Changes = std::vector<proto::KeyValueChangeEvent>;

  KvStore(std::string directory, KvLimits limits);
  // Gives the bytes it holds back to the store's budget.
  ~KvStore();
  KvStore(const KvStore&) = delete;
  KvStore& operator=(const KvStore&) = delete;
  // A moved-from store is empty and holds nothing of the budget.
  KvStore(KvStore&& other) noexcept;
  KvStore& operator=(KvStore&& other) noexcept;

  // Checks that `key` is a normalised, non-empty key of this directory within the key limit.
  // Possible errors: InvalidArgument.
  absl::Status CheckKey(absl::string_view key) const;

  // Stores `kv`; an existing key is replaced only with `allow_overwrite`.
  // Possible errors: AlreadyExists (no payload), InvalidArgument, ResourceExhausted.
  absl::Status Insert(const proto::KeyValueEntry& kv, bool allow_overwrite, Changes& changes);

  // Replaces the value of an existing key.
  // Possible errors: NotFound, InvalidArgument, ResourceExhausted.
  absl::Status Update(const proto::KeyValueEntry& kv, Changes& changes);

  // Returns the value of `key`, or nullptr when it is absent.
  const std::string* Find(absl::string_view key) const;

  // Adds `delta` to the 64-bit signed decimal stored under `key` (absent: 0); returns the sum.
  // Possible errors: FailedPrecondition (not an integer), OutOfRange (overflow),
  // InvalidArgument, ResourceExhausted.
  absl::StatusOr<int64_t> Increment(absl::string_view key, int64_t delta, Changes& changes);

  // Sets `desired` when the key holds `expected` (or, with expect_absent, is absent).
  // Possible errors: InvalidArgument, ResourceExhausted.
  absl::StatusOr<proto::CompareAndSwapResponse> CompareAndSwap(
      const proto::CompareAndSwapRequest& request, Changes& changes);

  // Returns every entry under "<directory>/" in key order; "" lists the whole store.
  // Possible errors: InvalidArgument.
  absl::StatusOr<std::vector<proto::KeyValueEntry>> List(absl::string_view directory) const;

  // Deletes `key`, and every key under "<key>/" when `is_directory`; "" with is_directory
  // empties the store. Absent keys are fine. Possible errors: InvalidArgument.
  absl::Status Delete(absl::string_view key, bool is_directory, Changes& changes);

  const std::string& directory() const { return directory_; }
  const KvLimits& limits() const { return limits_; }
  int64_t revision() const { return revision_; }
  int64_t size() const { return static_cast<int64_t>(data_.size()); }

 private:
  using Map = absl::btree_map<std::string, std::string>;

  // Gives every byte this store holds back to the budget.
  void ReleaseAll();
  // Takes `growth` bytes of the store's budget for `key`. Possible errors: ResourceExhausted.
  absl::Status Reserve(absl::string_view key, int64_t growth);
  // Stores `value` under the checked `key`, creating the key when absent (capacity permitting).
  absl::Status Store(absl::string_view key, std::string value, Changes& changes);
  // Removes [first, last), recording a change per key.
  void Erase(Map::iterator first, Map::iterator last, Changes& changes);
  void Record(proto::KeyValueChangeEvent::Kind kind, absl::string_view key, absl::string_view value,
              Changes& changes);
  // The range of keys under "<directory>/".
  std::pair<Map::const_iterator, Map::const_iterator> Subtree(absl::string_view directory) const;

  std::string directory_;
  KvLimits limits_;
  Map data_;
  int64_t revision_ = 0;
};

}  // namespace muster
