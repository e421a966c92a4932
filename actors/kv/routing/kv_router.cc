#include "muster/actors/kv/routing/kv_router.h"

#include <utility>

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>

#include "muster/messages/status/status_macros.h"

namespace muster {

KvRouter::KvRouter(KvLimits limits, SpawnFn spawn) : limits_(limits), spawn_(std::move(spawn)) {}

absl::StatusOr<KvDirectoryActor> KvRouter::Route(proto::InsertKeyValueRequest& request) {
  return RouteEntry(*request.mutable_kv());
}

absl::StatusOr<KvDirectoryActor> KvRouter::Route(proto::UpdateKeyValueRequest& request) {
  return RouteEntry(*request.mutable_kv());
}

absl::StatusOr<KvDirectoryActor> KvRouter::Route(proto::GetKeyValueRequest& request) {
  if (request.timeout_in_ms() < 0 || request.timeout_in_ms() > kMaxGetTimeoutMs) {
    return absl::InvalidArgumentError(
        absl::StrCat("GetKeyValue of key ", KeyForMessage(request.key()), " has a timeout of ",
                     request.timeout_in_ms(), " ms; give 1 to ", kMaxGetTimeoutMs,
                     " ms (a year), or 0 to wait without a deadline"));
  }
  return RouteKey(*request.mutable_key());
}

absl::StatusOr<KvDirectoryActor> KvRouter::Route(proto::GetKeyValueDirRequest& request) {
  return RouteKey(*request.mutable_directory_key());
}

absl::StatusOr<KvDirectoryActor> KvRouter::Route(proto::DeleteKeyValueRequest& request) {
  if (NormalizeKey(request.key()).empty() && !request.is_directory()) {
    return absl::InvalidArgumentError(
        "DeleteKeyValue of the root names no key: name the key to delete, or delete every key "
        "of the store on purpose (muster kv rm -r --all /)");
  }
  return RouteKey(*request.mutable_key());
}

absl::StatusOr<KvDirectoryActor> KvRouter::Route(proto::CompareAndSwapRequest& request) {
  MUSTER_RETURN_IF_ERROR(PrepareKey(*request.mutable_key()));
  MUSTER_RETURN_IF_ERROR(ValidateValue(request.key(), request.desired(), limits_));
  return FindOrSpawn(std::string(DirectoryOf(request.key())));
}

absl::StatusOr<KvDirectoryActor> KvRouter::Route(proto::WatchKeyRequest& request) {
  return RouteWatch(*request.mutable_key());
}

absl::StatusOr<KvDirectoryActor> KvRouter::Route(proto::StopWatchKeyRequest& request) {
  return RouteWatch(*request.mutable_key());
}

absl::StatusOr<KvDirectoryActor> KvRouter::Route(proto::ReduceKeyValueDirRequest& request) {
  return RouteDirectory(*request.mutable_directory_key(), "ReduceKeyValueDir");
}

absl::StatusOr<KvDirectoryActor> KvRouter::Route(proto::WaitForKeysRequest& request) {
  MUSTER_RETURN_IF_ERROR(CheckWaitForKeys(request, limits_));
  return RouteDirectory(*request.mutable_directory_key(), "WaitForKeys");
}

bool KvRouter::SpansRoot(proto::GetKeyValueDirRequest& request) {
  *request.mutable_directory_key() = NormalizeKey(request.directory_key());
  return request.directory_key().empty();
}

bool KvRouter::SpansRoot(proto::DeleteKeyValueRequest& request) {
  *request.mutable_key() = NormalizeKey(request.key());
  return request.key().empty() && request.is_directory();
}

absl::Status KvRouter::RootDeleteRefused() {
  return absl::FailedPreconditionError(
      "DeleteKeyValue of the root directory would delete every key of the store; set "
      "delete_root to confirm (muster kv rm -r --all /)");
}

std::optional<KvDirectoryActor> KvRouter::Find(const std::string& key) const {
  auto it = directories_.find(DirectoryOf(NormalizeKey(key)));
  if (it == directories_.end()) return std::nullopt;
  return it->second;
}

std::vector<KvDirectoryActor> KvRouter::Directories() const {
  std::vector<KvDirectoryActor> directories;
  directories.reserve(directories_.size());
  for (const auto& [name, directory] : directories_) directories.push_back(directory);
  return directories;
}

bool KvRouter::Forget(const caf::actor_addr& actor) {
  auto it = names_.find(actor);
  if (it == names_.end()) return false;
  directories_.erase(it->second);
  names_.erase(it);
  return true;
}

absl::Status KvRouter::PrepareKey(std::string& key) const {
  std::string normalized = NormalizeKey(key);
  MUSTER_RETURN_IF_ERROR(ValidateKey(key, normalized, limits_));
  if (!spawn_) {
    return absl::InvalidArgumentError(
        "the key-value router has no directory spawn function; construct it with one");
  }
  key = std::move(normalized);
  return absl::OkStatus();
}

absl::StatusOr<KvDirectoryActor> KvRouter::RouteKey(std::string& key) {
  MUSTER_RETURN_IF_ERROR(PrepareKey(key));
  return FindOrSpawn(std::string(DirectoryOf(key)));
}

absl::StatusOr<KvDirectoryActor> KvRouter::RouteEntry(proto::KeyValueEntry& kv) {
  MUSTER_RETURN_IF_ERROR(PrepareKey(*kv.mutable_key()));
  MUSTER_RETURN_IF_ERROR(ValidateValue(kv.key(), kv.value(), limits_));
  return FindOrSpawn(std::string(DirectoryOf(kv.key())));
}

absl::StatusOr<KvDirectoryActor> KvRouter::RouteWatch(std::string& key) {
  if (NormalizeKey(key).empty()) {
    return absl::InvalidArgumentError("watch a key or a directory, not the root");
  }
  return RouteKey(key);
}

absl::StatusOr<KvDirectoryActor> KvRouter::RouteDirectory(std::string& key,
                                                          absl::string_view call) {
  if (NormalizeKey(key).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(call, " of the root: name a directory, such as \"ranks\""));
  }
  return RouteKey(key);
}

absl::StatusOr<KvDirectoryActor> KvRouter::FindOrSpawn(const std::string& directory) {
  if (auto it = directories_.find(directory); it != directories_.end()) return it->second;
  if (static_cast<int64_t>(directories_.size()) >= limits_.max_directories) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "key-value directory ", KeyForMessage(directory), " would be one more than the ",
        limits_.max_directories,
        " top-level directories the leader keeps (--max-directories); put keys under existing "
        "directories"));
  }
  KvDirectoryActor actor = spawn_(directory, limits_);
  directories_.emplace(directory, actor);
  names_.emplace(actor.address(), directory);
  return actor;
}

}  // namespace muster
