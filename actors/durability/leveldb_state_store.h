// A leader's state dir: an embedded LevelDB database, locked by the leader that opened it,
// holding the records of state_store.h under their keys. Every write is synced to disk before
// it returns. StateStore::Open(dir) opens one.
#pragma once

#include <memory>
#include <string>

#include "muster/actors/durability/state_store.h"

namespace leveldb {
class DB;
}

namespace muster {

class LevelDbStateStore : public StateStore {
 public:
  // See StateStore::Open.
  static absl::StatusOr<std::shared_ptr<StateStore>> Open(const std::string& dir);
  ~LevelDbStateStore() override;

  // Also DataLoss for a checksum mismatch.
  absl::StatusOr<proto::RecoveredState> Load() const override;
  // The whole batch atomically, synced. Possible errors: Internal (naming the dir and the cause).
  absl::Status Write(const StateBatch& batch) override;
  // Closes the database and releases the dir's lock.
  void Close() override;
  const std::string& location() const override { return dir_; }

 private:
  LevelDbStateStore(std::string dir, std::unique_ptr<leveldb::DB> db);

  std::string dir_;
  std::unique_ptr<leveldb::DB> db_;
};

}  // namespace muster
