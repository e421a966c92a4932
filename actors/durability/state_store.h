// Where a leader's durable state lives: a StateStore holds the records of
// proto/leader_state.proto under these keys:
//
//   m/leader                     LeaderRecord (format, incarnation, starts, version, round,
//                                the failure told to the whole cluster)
//   t/<task name>                TaskRecord
//   b/<barrier id>               BarrierRecord (the last finished instance)
//   k/<key>                      KvRecord (the key's directory is its first path segment)
//   r/<directory>                KvRevisionRecord
//   h/<directory>/<revision>     KvHistoryRecord (recent changes, for resuming watches)
//   d/<directory>/<client>/<seq> StoredReply (applied writes, for deduplicating re-sent ones)
//
// Two stores implement it: a state dir (an embedded LevelDB database, leveldb_state_store.h)
// and etcd (net/ha/etcd_state_store.h, for standby leaders). Load() runs before any actor uses
// the store; afterwards only the state writer (state_writer_actor.h) writes, from its own
// thread. Not thread-safe otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>

#include "muster/actors/durability/state_writer_actor.h"
#include "muster/proto/leader_state.pb.h"

namespace muster {

// The format of the records; a state of another format is refused.
inline constexpr uint32_t kStateFormat = 1;

// Keys of the state (see above). Revisions, clients and sequence numbers are fixed-width
// hex so that they sort numerically.
std::string LeaderStateKey();
std::string TaskStateKey(absl::string_view task_name);
std::string BarrierStateKey(absl::string_view id);
std::string KvStateKey(absl::string_view key);
std::string KvRevisionStateKey(absl::string_view directory);
std::string KvHistoryStateKey(absl::string_view directory, int64_t revision);
std::string KvReplyStateKey(absl::string_view directory, uint64_t client, uint64_t seq);

// absl::Status <-> StoredStatus, payloads included.
proto::StoredStatus StoreStatus(const absl::Status& status);
absl::Status LoadStatus(const proto::StoredStatus& stored);

class StateStore {
 public:
  // Opens (creating when needed) the state dir `dir` and takes its lock (LevelDbStateStore).
  // Possible errors: FailedPrecondition (the dir is locked by a running leader, or holds a
  // state of another format), DataLoss (corrupt or unreadable files: the message names them
  // and what to do), Internal (other I/O failures, naming the dir and the cause).
  static absl::StatusOr<std::shared_ptr<StateStore>> Open(const std::string& dir);

  virtual ~StateStore() = default;

  // Reads every record. `fresh` is set for an empty store. Possible errors: DataLoss (a record
  // that does not parse or is damaged), FailedPrecondition (another format); each store adds
  // those of its medium.
  virtual absl::StatusOr<proto::RecoveredState> Load() const = 0;

  // Applies `batch` and makes it durable before returning: every unit of the batch
  // (StateBatch::Append) atomically, the units in order. Possible errors depend on the store;
  // each names where the state lives and the cause.
  virtual absl::Status Write(const StateBatch& batch) = 0;

  // Releases the store (the state writer does as it stops, so that a leader restarted in the
  // same process can open it again). Later writes fail.
  virtual void Close() = 0;

  // Where the state lives: the state dir, or etcd's endpoints and the prefix.
  virtual const std::string& location() const = 0;
};

// Turns records read from a store, in any order, into a RecoveredState, checking each.
class StateRecords {
 public:
  // `where` names the state in messages ("state dir /var/lib/job"); `remedy` says what to do
  // about a damaged state ("restore the dir from a backup, or move it aside to start with an
  // empty state"); `aside` how to start anew from a state of another format ("move the dir
  // aside").
  StateRecords(std::string where, std::string remedy, std::string aside);

  // Takes one record. Possible errors: DataLoss (it does not parse, or its key is unknown or
  // malformed).
  absl::Status Add(absl::string_view key, absl::string_view value);

  // The state of the records taken. Possible errors: DataLoss (records but no leader record),
  // FailedPrecondition (another format).
  absl::StatusOr<proto::RecoveredState> Finish() &&;

  // DataLoss: the state is damaged (`what`), naming where it is and the remedy.
  absl::Status Damaged(absl::string_view what) const;

 private:
  std::string where_;
  std::string remedy_;
  std::string aside_;
  proto::RecoveredState state_;
  std::map<std::string, proto::RecoveredKvDirectory> dirs_;
  bool has_leader_ = false;
  size_t records_ = 0;
};

}  // namespace muster
