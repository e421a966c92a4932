// A leader's state dir: an embedded LevelDB database (locked by the leader that opened it)
// holding the records of proto/leader_state.proto under these keys:
//
//   m/leader                     LeaderRecord (format, incarnation, starts, version, round)
//   t/<task name>                TaskRecord
//   b/<barrier id>               BarrierRecord (the last finished instance)
//   k/<key>                      KvRecord (the key's directory is its first path segment)
//   r/<directory>                KvRevisionRecord
//   h/<directory>/<revision>     KvHistoryRecord (recent changes, for resuming watches)
//   d/<directory>/<client>/<seq> StoredReply (applied writes, for deduplicating re-sent ones)
//
// Open() and Load() run before any actor uses the store; afterwards only the state writer
// (state_writer_actor.h) writes, from its own thread. Not thread-safe otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>

#include "muster/actors/durability/state_writer_actor.h"
#include "muster/proto/leader_state.pb.h"

namespace leveldb {
class DB;
}

namespace muster {

// The format of the records; a state dir of another format is refused.
inline constexpr uint32_t kStateFormat = 1;

// Keys of the state dir (see above). Revisions, clients and sequence numbers are fixed-width
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
  // Opens (creating when needed) the state dir `dir` and takes its lock.
  // Possible errors: FailedPrecondition (the dir is locked by a running leader, or holds a
  // state of another format), DataLoss (corrupt or unreadable files: the message names them
  // and what to do), Internal (other I/O failures, naming the dir and the cause).
  static absl::StatusOr<std::shared_ptr<StateStore>> Open(const std::string& dir);
  ~StateStore();
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  // Reads every record. `fresh` is set for an empty dir. Possible errors: DataLoss (a record
  // that does not parse or a checksum mismatch), FailedPrecondition (another format).
  absl::StatusOr<proto::RecoveredState> Load() const;

  // Applies `batch` atomically and syncs it to disk before returning.
  // Possible errors: Internal (naming the dir and the cause).
  absl::Status Write(const StateBatch& batch);

  // Closes the database and releases the dir's lock (the state writer does as it stops, so
  // that a leader restarted in the same process can open the dir). Later writes fail.
  void Close();

  const std::string& dir() const { return dir_; }

 private:
  StateStore(std::string dir, std::unique_ptr<leveldb::DB> db);

  std::string dir_;
  std::unique_ptr<leveldb::DB> db_;
};

}  // namespace muster
