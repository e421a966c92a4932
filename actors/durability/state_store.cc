#include "muster/actors/durability/state_store.h"

#include <cinttypes>
#include <utility>
#include <vector>

#include <absl/strings/escaping.h>
#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>

namespace muster {
namespace {

std::string Hex(uint64_t value) { return absl::StrCat(absl::Hex(value, absl::kZeroPad16)); }

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

StateRecords::StateRecords(std::string where, std::string remedy, std::string aside)
    : where_(std::move(where)), remedy_(std::move(remedy)), aside_(std::move(aside)) {}

absl::Status StateRecords::Damaged(absl::string_view what) const {
  return absl::DataLossError(absl::StrCat(where_, " is damaged: ", what,
                                          ". The leader refuses to serve data it cannot trust: ",
                                          remedy_, " (every task then registers anew)."));
}

absl::Status StateRecords::Add(absl::string_view key, absl::string_view value) {
  ++records_;
  // Parses `value` as the record `message` found under `key`.
  auto parse = [&](google::protobuf::Message* message) {
    if (message->ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      return absl::OkStatus();
    }
    return Damaged(absl::StrCat("record ", absl::CHexEscape(key), " (", value.size(),
                                " bytes) is not a ", message->GetDescriptor()->name()));
  };
  absl::string_view name = key;
  if (name == LeaderStateKey()) {
    has_leader_ = true;
    return parse(state_.mutable_leader());
  }
  if (absl::ConsumePrefix(&name, "t/")) return parse(state_.add_tasks());
  if (absl::ConsumePrefix(&name, "b/")) return parse(state_.add_barriers());
  if (absl::ConsumePrefix(&name, "k/")) {
    auto& dir = Directory(dirs_, name.substr(0, name.find('/')));
    proto::KvRecord record;
    absl::Status parsed = parse(&record);
    auto* entry = dir.add_entries();
    entry->set_key(std::string(name));
    entry->set_value(record.value());
    record.clear_value();
    *dir.add_records() = std::move(record);
    return parsed;
  }
  if (absl::ConsumePrefix(&name, "r/")) {
    proto::KvRevisionRecord record;
    absl::Status parsed = parse(&record);
    Directory(dirs_, name).set_revision(record.revision());
    Directory(dirs_, name).set_watched(record.watched());
    return parsed;
  }
  if (absl::ConsumePrefix(&name, "h/")) {
    proto::KvHistoryRecord record;
    absl::Status parsed = parse(&record);
    *Directory(dirs_, name.substr(0, name.find('/'))).add_history() = record.event();
    return parsed;
  }
  if (absl::ConsumePrefix(&name, "d/")) {
    std::vector<absl::string_view> parts = absl::StrSplit(name, '/');
    proto::RecoveredKvDirectory::Reply reply;
    uint64_t client = 0, seq = 0;
    if (parts.size() != 3 || !absl::SimpleHexAtoi(parts[1], &client) ||
        !absl::SimpleHexAtoi(parts[2], &seq)) {
      return Damaged(absl::StrCat("reply key ", absl::CHexEscape(key), " is malformed"));
    }
    reply.set_client(client);
    reply.set_seq(seq);
    absl::Status parsed = parse(reply.mutable_reply());
    *Directory(dirs_, parts[0]).add_replies() = std::move(reply);
    return parsed;
  }
  return Damaged(absl::StrCat("unknown record ", absl::CHexEscape(key)));
}

absl::StatusOr<proto::RecoveredState> StateRecords::Finish() && {
  if (records_ == 0) {
    state_.set_fresh(true);
    return std::move(state_);
  }
  if (!has_leader_) return Damaged("it has records but no leader record (m/leader)");
  if (state_.leader().format() != kStateFormat) {
    return absl::FailedPreconditionError(
        absl::StrCat(where_, " holds state of format ", state_.leader().format(),
                     " but this leader reads format ", kStateFormat,
                     ": run the Muster version that wrote it, or ", aside_, " to start empty."));
  }
  for (auto& [name, dir] : dirs_) *state_.add_directories() = std::move(dir);
  return std::move(state_);
}

}  // namespace muster
