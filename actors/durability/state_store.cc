#include "muster/actors/durability/state_store.h"

#include <cinttypes>
#include <map>
#include <utility>

#include <absl/strings/escaping.h>
#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <leveldb/db.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>

namespace muster {
namespace {

std::string Hex(uint64_t value) { return absl::StrCat(absl::Hex(value, absl::kZeroPad16)); }

absl::Status Corrupt(const std::string& dir, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(
      "state dir ", dir, " is damaged: ", what,
      ". The leader refuses to serve data it cannot trust: restore the dir from a backup, or move "
      "it aside to start with an empty state (every task then registers anew)."));
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
  if (status.IsCorruption()) return Corrupt(dir, cause);
  return absl::InternalError(absl::StrCat("cannot open state dir ", dir, ": ", cause));
}

// Parses `value` as the record `message` found under `key`.
absl::Status Parse(const std::string& dir, const leveldb::Slice& key, const leveldb::Slice& value,
                   google::protobuf::Message* message) {
  if (message->ParseFromArray(value.data(), static_cast<int>(value.size()))) {
    return absl::OkStatus();
  }
  return Corrupt(dir, absl::StrCat("record ", absl::CHexEscape(key.ToString()), " (", value.size(),
                                   " bytes) is not a ", message->GetDescriptor()->name()));
}

// The KV directory a recovered record belongs to, created on first use.
proto::RecoveredKvDirectory& Directory(std::map<std::string, proto::RecoveredKvDirectory>& dirs,
                                       absl::string_view directory) {
  auto [it, added] = dirs.try_emplace(std::string(directory));
  if (added) it->second.set_directory(std::string(directory));
  return it->second;
}

}  // namespace

std::string LeaderStateKey() { return "m/leader"; }
std::string TaskStateKey(absl::string_view task_name) { return absl::StrCat("t/", task_name); }
std::string BarrierStateKey(absl::string_view id) { return absl::StrCat("b/", id); }
std::string KvStateKey(absl::string_view key) { return absl::StrCat("k/", key); }
std::string KvRevisionStateKey(absl::string_view directory) {
  return absl::StrCat("r/", directory);
}
std::string KvHistoryStateKey(absl::string_view directory, int64_t revision) {
  return absl::StrCat("h/", directory, "/", Hex(static_cast<uint64_t>(revision)));
}
std::string KvReplyStateKey(absl::string_view directory, uint64_t client, uint64_t seq) {
  return absl::StrCat("d/", directory, "/", Hex(client), "/", Hex(seq));
}

proto::StoredStatus StoreStatus(const absl::Status& status) {
  proto::StoredStatus stored;
  stored.set_code(static_cast<int>(status.code()));
  stored.set_message(std::string(status.message()));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    (*stored.mutable_payloads())[std::string(url)] = std::string(payload);
  });
  return stored;
}

absl::Status LoadStatus(const proto::StoredStatus& stored) {
  int code = stored.code();
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    code = static_cast<int>(absl::StatusCode::kUnknown);
  }
  absl::Status status(static_cast<absl::StatusCode>(code), stored.message());
  if (status.ok()) return status;
  for (const auto& [url, payload] : stored.payloads()) status.SetPayload(url, absl::Cord(payload));
  return status;
}

StateStore::StateStore(std::string dir, std::unique_ptr<leveldb::DB> db)
    : dir_(std::move(dir)), db_(std::move(db)) {}

StateStore::~StateStore() = default;

absl::StatusOr<std::shared_ptr<StateStore>> StateStore::Open(const std::string& dir) {
  leveldb::Options options;
  options.create_if_missing = true;
  // Damage fails the open. Except in the newest log's last 32 KiB block, where LevelDB cannot
  // tell a damaged record from a torn write (never acknowledged) and drops the log from there.
  options.paranoid_checks = true;
  leveldb::DB* db = nullptr;
  leveldb::Status status = leveldb::DB::Open(options, dir, &db);
  if (!status.ok()) return OpenError(dir, status);
  return std::shared_ptr<StateStore>(new StateStore(dir, std::unique_ptr<leveldb::DB>(db)));
}

absl::StatusOr<proto::RecoveredState> StateStore::Load() const {
  proto::RecoveredState state;
  std::map<std::string, proto::RecoveredKvDirectory> dirs;
  leveldb::ReadOptions options;
  options.verify_checksums = true;
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(options));
  bool has_leader = false;
  size_t records = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    ++records;
    leveldb::Slice key = it->key();
    leveldb::Slice value = it->value();
    absl::string_view name(key.data(), key.size());
    absl::Status parsed;
    if (name == LeaderStateKey()) {
      parsed = Parse(dir_, key, value, state.mutable_leader());
      has_leader = true;
    } else if (absl::ConsumePrefix(&name, "t/")) {
      parsed = Parse(dir_, key, value, state.add_tasks());
    } else if (absl::ConsumePrefix(&name, "b/")) {
      parsed = Parse(dir_, key, value, state.add_barriers());
    } else if (absl::ConsumePrefix(&name, "k/")) {
      auto& dir = Directory(dirs, name.substr(0, name.find('/')));
      proto::KvRecord record;
      parsed = Parse(dir_, key, value, &record);
      auto* entry = dir.add_entries();
      entry->set_key(std::string(name));
      entry->set_value(record.value());
      record.clear_value();
      *dir.add_records() = std::move(record);
    } else if (absl::ConsumePrefix(&name, "r/")) {
      proto::KvRevisionRecord record;
      parsed = Parse(dir_, key, value, &record);
      Directory(dirs, name).set_revision(record.revision());
      Directory(dirs, name).set_watched(record.watched());
    } else if (absl::ConsumePrefix(&name, "h/")) {
      proto::KvHistoryRecord record;
      parsed = Parse(dir_, key, value, &record);
      *Directory(dirs, name.substr(0, name.find('/'))).add_history() = record.event();
    } else if (absl::ConsumePrefix(&name, "d/")) {
      std::vector<absl::string_view> parts = absl::StrSplit(name, '/');
      proto::RecoveredKvDirectory::Reply reply;
      uint64_t client = 0, seq = 0;
      if (parts.size() != 3 || !absl::SimpleHexAtoi(parts[1], &client) ||
          !absl::SimpleHexAtoi(parts[2], &seq)) {
        return Corrupt(
            dir_, absl::StrCat("reply key ", absl::CHexEscape(key.ToString()), " is malformed"));
      }
      reply.set_client(client);
      reply.set_seq(seq);
      parsed = Parse(dir_, key, value, reply.mutable_reply());
      *Directory(dirs, parts[0]).add_replies() = std::move(reply);
    } else {
      return Corrupt(dir_, absl::StrCat("unknown record ", absl::CHexEscape(key.ToString())));
    }
    if (!parsed.ok()) return parsed;
  }
  if (!it->status().ok()) return OpenError(dir_, it->status());
  if (records == 0) {
    state.set_fresh(true);
    return state;
  }
  if (!has_leader) return Corrupt(dir_, "it has records but no leader record (m/leader)");
  if (state.leader().format() != kStateFormat) {
    return absl::FailedPreconditionError(absl::StrCat(
        "state dir ", dir_, " holds state of format ", state.leader().format(),
        " but this leader reads format ", kStateFormat,
        ": run the Muster version that wrote it, or move the dir aside to start empty."));
  }
  for (auto& [name, dir] : dirs) *state.add_directories() = std::move(dir);
  return state;
}

void StateStore::Close() { db_.reset(); }

absl::Status StateStore::Write(const StateBatch& batch) {
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
