#include "muster/actors/durability/leveldb_state_store.h"

#include <utility>

#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <leveldb/db.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>

namespace muster {
namespace {

StateRecords Records(const std::string& dir) {
  return StateRecords(absl::StrCat("state dir ", dir),
                      "restore the dir from a backup, or move it aside to start with an empty "
                      "state",
                      "move the dir aside");
}

// The error of a failed open, in the leader's words.
absl::Status OpenError(const std::string& dir, const leveldb::Status& status) {
  std::string cause = status.ToString();
  if (status.IsIOError() && absl::StrContains(cause, "/LOCK")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "state dir ", dir, " is in use by another leader (", cause,
        "). One leader at a time owns a state dir: stop the other one, or give this one its own "
        "dir."));
  }
  if (status.IsCorruption()) return Records(dir).Damaged(cause);
  return absl::InternalError(absl::StrCat("cannot open state dir ", dir, ": ", cause));
}

}  // namespace

absl::StatusOr<std::shared_ptr<StateStore>> StateStore::Open(const std::string& dir) {
  return LevelDbStateStore::Open(dir);
}

LevelDbStateStore::LevelDbStateStore(std::string dir, std::unique_ptr<leveldb::DB> db)
    : dir_(std::move(dir)), db_(std::move(db)) {}

LevelDbStateStore::~LevelDbStateStore() = default;

absl::StatusOr<std::shared_ptr<StateStore>> LevelDbStateStore::Open(const std::string& dir) {
  leveldb::Options options;
  options.create_if_missing = true;
  // Damage fails the open. Except in the newest log's last 32 KiB block, where LevelDB cannot
  // tell a damaged record from a torn write (never acknowledged) and drops the log from there.
  options.paranoid_checks = true;
  leveldb::DB* db = nullptr;
  leveldb::Status status = leveldb::DB::Open(options, dir, &db);
  if (!status.ok()) return OpenError(dir, status);
  return std::shared_ptr<StateStore>(new LevelDbStateStore(dir, std::unique_ptr<leveldb::DB>(db)));
}

absl::StatusOr<proto::RecoveredState> LevelDbStateStore::Load() const {
  StateRecords records = Records(dir_);
  leveldb::ReadOptions options;
  options.verify_checksums = true;
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(options));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    absl::Status added = records.Add(absl::string_view(it->key().data(), it->key().size()),
                                     absl::string_view(it->value().data(), it->value().size()));
    if (!added.ok()) return added;
  }
  if (!it->status().ok()) return OpenError(dir_, it->status());
  return std::move(records).Finish();
}

void LevelDbStateStore::Close() { db_.reset(); }

absl::Status LevelDbStateStore::Write(const StateBatch& batch) {
  if (!db_) {
    return absl::InternalError(absl::StrCat("cannot write state dir ", dir_, ": it is closed"));
  }
  leveldb::WriteBatch write;
  for (const auto& [key, value] : batch.ops) {
    if (value) {
      write.Put(key, *value);
    } else {
      write.Delete(key);
    }
  }
  leveldb::WriteOptions options;
  options.sync = true;
  leveldb::Status status = db_->Write(options, &write);
  if (status.ok()) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("cannot write state dir ", dir_, ": ", status.ToString()));
}

}  // namespace muster
