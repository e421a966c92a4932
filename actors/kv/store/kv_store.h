// The data of one key-value directory, without actors: an ordered map from normalised key to
// value, so that directory reads and deletes are range scans (O(log n) per operation), and the
// directory's revision, which every change bumps. Each mutation appends its changes (one per
// key) so that the owning actor (kv_directory_actor.h) can notify watchers and wake getters.
//
// An ephemeral key has an owner, the incarnation of the task that wrote it: DropOwner deletes
// every key of an incarnation that ended. Any write that is not ephemeral (increments included)
// makes a key persistent again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <absl/container/btree_map.h>
#include <absl/container/flat_hash_map.h>
#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>

#include "muster/actors/kv/store/kv_key.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

// The incarnation of a task that owns an ephemeral key.
struct KvOwner {
  std::string task;  // TaskName()
  uint64_t incarnation = 0;
  bool operator==(const KvOwner& other) const {
    return incarnation == other.incarnation && task == other.task;
  }
};

// The folds of ReduceKeyValueDir.
struct KvReduction {
  int64_t value = 0;
  int64_t count = 0;
};

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
  // `owner` makes the key ephemeral (null: persistent), here and in Update / CompareAndSwap.
  absl::Status Insert(const proto::KeyValueEntry& kv, bool allow_overwrite, Changes& changes,
                      const KvOwner* owner = nullptr);

  // Replaces the value of an existing key.
  // Possible errors: NotFound, InvalidArgument, ResourceExhausted.
  absl::Status Update(const proto::KeyValueEntry& kv, Changes& changes,
                      const KvOwner* owner = nullptr);

  // Returns the value of `key`, or nullptr when it is absent.
  const std::string* Find(absl::string_view key) const;

  // Adds `delta` to the 64-bit signed decimal stored under `key` (absent: 0); returns the sum.
  // Possible errors: FailedPrecondition (not an integer), OutOfRange (overflow),
  // InvalidArgument, ResourceExhausted.
  absl::StatusOr<int64_t> Increment(absl::string_view key, int64_t delta, Changes& changes);

  // Sets `desired` when the key holds `expected` (or, with expect_absent, is absent).
  // Possible errors: InvalidArgument, ResourceExhausted.
  absl::StatusOr<proto::CompareAndSwapResponse> CompareAndSwap(
      const proto::CompareAndSwapRequest& request, Changes& changes,
      const KvOwner* owner = nullptr);

  // Returns every entry under "<directory>/" in key order; "" lists the whole store.
  // Possible errors: InvalidArgument.
  absl::StatusOr<std::vector<proto::KeyValueEntry>> List(absl::string_view directory) const;

  // Deletes `key`, and every key under "<key>/" when `is_directory`; "" with is_directory
  // empties the store. Absent keys are fine. Possible errors: InvalidArgument.
  absl::Status Delete(absl::string_view key, bool is_directory, Changes& changes);

  // Deletes every key that `owner` wrote as ephemeral.
  void DropOwner(const KvOwner& owner, Changes& changes);
  // The owner of an ephemeral key; null for a persistent or absent key.
  const KvOwner* OwnerOf(absl::string_view key) const;

  // Folds the integer values of every key under "<directory>/" (max, min or sum).
  // Possible errors: InvalidArgument (bad directory or op), NotFound (no keys),
  // FailedPrecondition (a value is not a 64-bit signed decimal), OutOfRange (sum overflow).
  absl::StatusOr<KvReduction> Reduce(absl::string_view directory, proto::ReduceOp op) const;
  // How many keys are under "<directory>/".
  int64_t CountUnder(absl::string_view directory) const;

  // The calls of MUSTER_KV_CALLS (kv_calls.h) that the store answers by itself, request in,
  // response out: the directory actor hands it every such call but GetKeyValue and WaitForKeys,
  // which may wait. A write (its request has a request_id) fills `changes`; `owner` as in
  // Insert (null for a request that is not ephemeral). The errors are the methods' above.
  absl::StatusOr<proto::InsertKeyValueResponse> Apply(const proto::InsertKeyValueRequest& request,
                                                      Changes& changes, const KvOwner* owner);
  absl::StatusOr<proto::UpdateKeyValueResponse> Apply(const proto::UpdateKeyValueRequest& request,
                                                      Changes& changes, const KvOwner* owner);
  absl::StatusOr<proto::IncrementKeyValueResponse> Apply(
      const proto::IncrementKeyValueRequest& request, Changes& changes, const KvOwner* owner);
  absl::StatusOr<proto::DeleteKeyValueResponse> Apply(const proto::DeleteKeyValueRequest& request,
                                                      Changes& changes, const KvOwner* owner);
  absl::StatusOr<proto::CompareAndSwapResponse> Apply(const proto::CompareAndSwapRequest& request,
                                                      Changes& changes, const KvOwner* owner);
  absl::StatusOr<proto::TryGetKeyValueResponse> Read(
      const proto::TryGetKeyValueRequest& request) const;
  absl::StatusOr<proto::GetKeyValueDirResponse> Read(
      const proto::GetKeyValueDirRequest& request) const;
  absl::StatusOr<proto::ReduceKeyValueDirResponse> Read(
      const proto::ReduceKeyValueDirRequest& request) const;

  // Loads a key a restarted leader recovered (no change is recorded), then the revision.
  // Possible errors: as Insert (a recovered state over today's limits).
  absl::Status Restore(const proto::KeyValueEntry& kv, const KvOwner* owner);
  void RestoreRevision(int64_t revision) { revision_ = revision; }

  const std::string& directory() const { return directory_; }
  const KvLimits& limits() const { return limits_; }
  int64_t revision() const { return revision_; }
  int64_t size() const { return static_cast<int64_t>(data_.size()); }
  // The bytes of the keys and values held.
  int64_t bytes() const { return bytes_; }

 private:
  using Map = absl::btree_map<std::string, std::string>;

  // Gives every byte this store holds back to the budget.
  void ReleaseAll();
  // Takes `growth` bytes of the store's budget for `key`. Possible errors: ResourceExhausted.
  absl::Status Reserve(absl::string_view key, int64_t growth);
  // Stores `value` under the checked `key`, creating the key when absent (capacity permitting).
  absl::Status Store(absl::string_view key, std::string value, Changes& changes,
                     const KvOwner* owner = nullptr);
  // Store without the owner bookkeeping.
  absl::Status StoreValue(absl::string_view key, std::string value, Changes& changes);
  // Removes [first, last), recording a change per key.
  void Erase(Map::iterator first, Map::iterator last, Changes& changes);
  void Record(proto::KeyValueChangeEvent::Kind kind, absl::string_view key, absl::string_view value,
              Changes& changes);
  // The range of keys under "<directory>/".
  std::pair<Map::const_iterator, Map::const_iterator> Subtree(absl::string_view directory) const;

  std::string directory_;
  KvLimits limits_;
  Map data_;
  // The owners of ephemeral keys (a small subset of data_'s keys, usually).
  absl::flat_hash_map<std::string, KvOwner> owners_;
  int64_t revision_ = 0;
  int64_t bytes_ = 0;
};

}  // namespace muster
