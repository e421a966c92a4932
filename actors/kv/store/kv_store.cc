#include "muster/actors/kv/store/kv_store.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include <absl/strings/escaping.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>

namespace muster {
namespace {

using Kind = proto::KeyValueChangeEvent;

// Values are shown escaped and at most this long in error messages.
constexpr size_t kMaxValueInMessage = 64;

std::string ValueForMessage(absl::string_view value) {
  std::string shown = absl::CHexEscape(value.substr(0, kMaxValueInMessage));
  if (value.size() > kMaxValueInMessage) absl::StrAppend(&shown, "... (", value.size(), " bytes)");
  return shown;
}

// The first key after every key under "<directory>/": '0' follows '/' in byte order.
std::string SubtreeEnd(absl::string_view directory) { return absl::StrCat(directory, "0"); }

}  // namespace

KvStore::KvStore(std::string directory, KvLimits limits)
    : directory_(std::move(directory)), limits_(limits) {}

absl::Status KvStore::CheckKey(absl::string_view key) const {
  if (!IsNormalizedKey(key)) {
    return absl::InvalidArgumentError(
        absl::StrCat("key \"", KeyForMessage(key), "\" is not normalised (expected \"",
                     KeyForMessage(NormalizeKey(key)), "\"); send keys through the coordinator"));
  }
  if (absl::Status status = ValidateKey(key, key, limits_); !status.ok()) return status;
  if (DirectoryOf(key) != directory_) {
    return absl::InvalidArgumentError(
        absl::StrCat("key ", KeyForMessage(key), " does not belong to directory ", directory_,
                     "; send keys through the coordinator, which routes them"));
  }
  return absl::OkStatus();
}

absl::Status KvStore::Insert(const proto::KeyValueEntry& kv, bool allow_overwrite, Changes& changes,
                             const KvOwner* owner) {
  if (absl::Status status = CheckKey(kv.key()); !status.ok()) return status;
  if (!allow_overwrite && data_.contains(kv.key())) {
    return absl::AlreadyExistsError(absl::StrCat("key ", KeyForMessage(kv.key()),
                                                 " already exists; pass allow_overwrite or use "
                                                 "UpdateKeyValue"));
  }
  return Store(kv.key(), kv.value(), changes, owner);
}

absl::Status KvStore::Update(const proto::KeyValueEntry& kv, Changes& changes,
                             const KvOwner* owner) {
  if (absl::Status status = CheckKey(kv.key()); !status.ok()) return status;
  if (!data_.contains(kv.key())) {
    return absl::NotFoundError(absl::StrCat("UpdateKeyValue: key ", KeyForMessage(kv.key()),
                                            " not found; insert it with InsertKeyValue first"));
  }
  return Store(kv.key(), kv.value(), changes, owner);
}

const std::string* KvStore::Find(absl::string_view key) const {
  auto it = data_.find(key);
  return it == data_.end() ? nullptr : &it->second;
}

absl::StatusOr<int64_t> KvStore::Increment(absl::string_view key, int64_t delta, Changes& changes) {
  if (absl::Status status = CheckKey(key); !status.ok()) return status;
  int64_t value = 0;
  const std::string* current = Find(key);
  if (current != nullptr && !absl::SimpleAtoi(*current, &value)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "IncrementKeyValue: key ", KeyForMessage(key), " holds \"", ValueForMessage(*current),
        "\", which is not a 64-bit signed decimal integer; increment a numeric key"));
  }
  int64_t sum = 0;
  if (__builtin_add_overflow(value, delta, &sum)) {
    return absl::OutOfRangeError(absl::StrCat("IncrementKeyValue: key ", KeyForMessage(key),
                                              " holds ", value, "; adding ", delta,
                                              " overflows a 64-bit signed integer, the value "
                                              "is unchanged"));
  }
  if (absl::Status status = Store(key, absl::StrCat(sum), changes); !status.ok()) return status;
  return sum;
}

absl::StatusOr<proto::CompareAndSwapResponse> KvStore::CompareAndSwap(
    const proto::CompareAndSwapRequest& request, Changes& changes, const KvOwner* owner) {
  if (absl::Status status = CheckKey(request.key()); !status.ok()) return status;
  if (absl::Status status = ValidateValue(request.key(), request.desired(), limits_);
      !status.ok()) {
    return status;
  }
  const std::string* current = Find(request.key());
  bool matches = current == nullptr ? request.expect_absent()
                                    : !request.expect_absent() && *current == request.expected();
  proto::CompareAndSwapResponse response;
  if (matches) {
    if (absl::Status status = Store(request.key(), request.desired(), changes, owner);
        !status.ok()) {
      return status;
    }
    current = Find(request.key());
  }
  response.set_succeeded(matches);
  response.set_exists(current != nullptr);
  if (current != nullptr) response.set_current(*current);
  return response;
}

absl::StatusOr<std::vector<proto::KeyValueEntry>> KvStore::List(absl::string_view directory) const {
  if (!directory.empty()) {
    if (absl::Status status = CheckKey(directory); !status.ok()) return status;
  }
  auto [first, last] = Subtree(directory);
  std::vector<proto::KeyValueEntry> entries;
  for (auto it = first; it != last; ++it) {
    proto::KeyValueEntry& entry = entries.emplace_back();
    entry.set_key(it->first);
    entry.set_value(it->second);
  }
  return entries;
}

absl::Status KvStore::Delete(absl::string_view key, bool is_directory, Changes& changes) {
  if (key.empty() && is_directory) {
    Erase(data_.begin(), data_.end(), changes);
    return absl::OkStatus();
  }
  if (absl::Status status = CheckKey(key); !status.ok()) return status;
  if (auto it = data_.find(key); it != data_.end()) Erase(it, std::next(it), changes);
  if (is_directory) {
    std::string prefix = absl::StrCat(key, "/");
    Erase(data_.lower_bound(prefix), data_.lower_bound(SubtreeEnd(key)), changes);
  }
  return absl::OkStatus();
}

void KvStore::DropOwner(const KvOwner& owner, Changes& changes) {
  std::vector<std::string> keys;
  for (const auto& [key, key_owner] : owners_) {
    if (key_owner == owner) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());  // deletions in key order, as a directory delete does
  for (const std::string& key : keys) {
    if (auto it = data_.find(key); it != data_.end()) Erase(it, std::next(it), changes);
  }
}

const KvOwner* KvStore::OwnerOf(absl::string_view key) const {
  auto it = owners_.find(key);
  return it == owners_.end() ? nullptr : &it->second;
}

absl::StatusOr<KvReduction> KvStore::Reduce(absl::string_view directory, proto::ReduceOp op) const {
  if (op != proto::REDUCE_MAX && op != proto::REDUCE_MIN && op != proto::REDUCE_SUM) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReduceKeyValueDir of ", KeyForMessage(directory), " names op ",
                     static_cast<int>(op), "; use REDUCE_MAX, REDUCE_MIN or REDUCE_SUM"));
  }
  if (absl::Status status = CheckKey(directory); !status.ok()) return status;
  auto [first, last] = Subtree(directory);
  KvReduction result;
  for (auto it = first; it != last; ++it) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(it->second, &value)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "ReduceKeyValueDir of ", KeyForMessage(directory), ": key ", KeyForMessage(it->first),
          " holds \"", ValueForMessage(it->second),
          "\", which is not a 64-bit signed decimal integer; reduce a directory of numbers"));
    }
    if (result.count == 0) {
      result.value = value;
    } else if (op == proto::REDUCE_MAX) {
      result.value = std::max(result.value, value);
    } else if (op == proto::REDUCE_MIN) {
      result.value = std::min(result.value, value);
    } else if (__builtin_add_overflow(result.value, value, &result.value)) {
      return absl::OutOfRangeError(absl::StrCat("ReduceKeyValueDir of ", KeyForMessage(directory),
                                                ": the sum overflows a 64-bit signed integer"));
    }
    ++result.count;
  }
  if (result.count == 0) {
    return absl::NotFoundError(absl::StrCat("ReduceKeyValueDir: no keys under ",
                                            KeyForMessage(directory), "; nothing to reduce"));
  }
  return result;
}

int64_t KvStore::CountUnder(absl::string_view directory) const {
  auto [first, last] = Subtree(directory);
  return std::distance(first, last);
}

absl::Status KvStore::Reserve(absl::string_view key, int64_t growth) {
  if (growth <= 0 || !limits_.budget || limits_.budget->Reserve(growth)) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "Storing ", KeyForMessage(key), " would take the key-value store over its limit of ",
      limits_.budget->limit(), " bytes (", limits_.budget->used(),
      " in use); delete keys you no longer need, or raise --max-store-size"));
}

absl::Status KvStore::Store(absl::string_view key, std::string value, Changes& changes,
                            const KvOwner* owner) {
  if (absl::Status status = ValidateValue(key, value, limits_); !status.ok()) return status;
  absl::Status stored = StoreValue(key, std::move(value), changes);
  if (!stored.ok()) return stored;
  if (owner != nullptr) {
    owners_[key] = *owner;
  } else if (!owners_.empty()) {
    owners_.erase(key);
  }
  return absl::OkStatus();
}

absl::Status KvStore::StoreValue(absl::string_view key, std::string value, Changes& changes) {
  auto it = data_.find(key);
  if (it != data_.end()) {
    int64_t growth = static_cast<int64_t>(value.size()) - static_cast<int64_t>(it->second.size());
    if (absl::Status status = Reserve(key, growth); !status.ok()) return status;
    if (growth < 0 && limits_.budget) limits_.budget->Release(-growth);
    bytes_ += growth;
    it->second = std::move(value);
    Record(Kind::UPDATED, key, it->second, changes);
    return absl::OkStatus();
  }
  if (absl::Status status = ValidateDirectoryCapacity(directory_, key, size(), limits_);
      !status.ok()) {
    return status;
  }
  if (absl::Status status = Reserve(key, static_cast<int64_t>(key.size() + value.size()));
      !status.ok()) {
    return status;
  }
  bytes_ += static_cast<int64_t>(key.size() + value.size());
  it = data_.emplace(std::string(key), std::move(value)).first;
  Record(Kind::INSERTED, key, it->second, changes);
  return absl::OkStatus();
}

void KvStore::Erase(Map::iterator first, Map::iterator last, Changes& changes) {
  int64_t freed = 0;
  for (auto it = first; it != last; ++it) {
    Record(Kind::DELETED, it->first, "", changes);
    freed += static_cast<int64_t>(it->first.size() + it->second.size());
    if (!owners_.empty()) owners_.erase(it->first);
  }
  data_.erase(first, last);
  bytes_ -= freed;
  if (limits_.budget) limits_.budget->Release(freed);
}

absl::Status KvStore::Restore(const proto::KeyValueEntry& kv, const KvOwner* owner) {
  if (absl::Status status = CheckKey(kv.key()); !status.ok()) return status;
  Changes ignored;
  int64_t revision = revision_;
  absl::Status status = Store(kv.key(), kv.value(), ignored, owner);
  revision_ = revision;
  return status;
}

KvStore::~KvStore() { ReleaseAll(); }

KvStore::KvStore(KvStore&& other) noexcept
    : directory_(std::move(other.directory_)),
      limits_(std::move(other.limits_)),
      data_(std::move(other.data_)),
      owners_(std::move(other.owners_)),
      revision_(other.revision_),
      bytes_(other.bytes_) {
  other.data_.clear();
  other.bytes_ = 0;
  other.owners_.clear();
  other.limits_.budget.reset();
}

KvStore& KvStore::operator=(KvStore&& other) noexcept {
  if (this == &other) return *this;
  ReleaseAll();
  directory_ = std::move(other.directory_);
  limits_ = std::move(other.limits_);
  data_ = std::move(other.data_);
  owners_ = std::move(other.owners_);
  revision_ = other.revision_;
  bytes_ = other.bytes_;
  other.bytes_ = 0;
  other.data_.clear();
  other.owners_.clear();
  other.limits_.budget.reset();
  return *this;
}

void KvStore::ReleaseAll() {
  if (!limits_.budget) return;
  int64_t held = 0;
  for (const auto& [key, value] : data_) held += static_cast<int64_t>(key.size() + value.size());
  limits_.budget->Release(held);
}

void KvStore::Record(proto::KeyValueChangeEvent::Kind kind, absl::string_view key,
                     absl::string_view value, Changes& changes) {
  proto::KeyValueChangeEvent& change = changes.emplace_back();
  change.set_kind(kind);
  change.set_key(std::string(key));
  change.set_value(std::string(value));
  change.set_revision(++revision_);
}

std::pair<KvStore::Map::const_iterator, KvStore::Map::const_iterator> KvStore::Subtree(
    absl::string_view directory) const {
  if (directory.empty()) return {data_.begin(), data_.end()};
  return {data_.lower_bound(absl::StrCat(directory, "/")),
          data_.lower_bound(SubtreeEnd(directory))};
}

// The calls of MUSTER_KV_CALLS.

absl::StatusOr<proto::InsertKeyValueResponse> KvStore::Apply(
    const proto::InsertKeyValueRequest& request, Changes& changes, const KvOwner* owner) {
  absl::Status status = Insert(request.kv(), request.allow_overwrite(), changes, owner);
  if (!status.ok()) return status;
  return proto::InsertKeyValueResponse();
}

absl::StatusOr<proto::UpdateKeyValueResponse> KvStore::Apply(
    const proto::UpdateKeyValueRequest& request, Changes& changes, const KvOwner* owner) {
  absl::Status status = Update(request.kv(), changes, owner);
  if (!status.ok()) return status;
  return proto::UpdateKeyValueResponse();
}

absl::StatusOr<proto::IncrementKeyValueResponse> KvStore::Apply(
    const proto::IncrementKeyValueRequest& request, Changes& changes, const KvOwner*) {
  absl::StatusOr<int64_t> sum = Increment(request.key(), request.increment(), changes);
  if (!sum.ok()) return sum.status();
  proto::IncrementKeyValueResponse response;
  response.mutable_kv()->set_key(request.key());
  response.mutable_kv()->set_value(absl::StrCat(*sum));
  return response;
}

absl::StatusOr<proto::DeleteKeyValueResponse> KvStore::Apply(
    const proto::DeleteKeyValueRequest& request, Changes& changes, const KvOwner*) {
  absl::Status status = Delete(request.key(), request.is_directory(), changes);
  if (!status.ok()) return status;
  return proto::DeleteKeyValueResponse();
}

absl::StatusOr<proto::CompareAndSwapResponse> KvStore::Apply(
    const proto::CompareAndSwapRequest& request, Changes& changes, const KvOwner* owner) {
  return CompareAndSwap(request, changes, owner);
}

absl::StatusOr<proto::TryGetKeyValueResponse> KvStore::Read(
    const proto::TryGetKeyValueRequest& request) const {
  if (absl::Status status = CheckKey(request.key()); !status.ok()) return status;
  const std::string* value = Find(request.key());
  if (value == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("Config key ", KeyForMessage(request.key()), " not found."));
  }
  proto::TryGetKeyValueResponse response;
  response.mutable_kv()->set_key(request.key());
  response.mutable_kv()->set_value(*value);
  return response;
}

absl::StatusOr<proto::GetKeyValueDirResponse> KvStore::Read(
    const proto::GetKeyValueDirRequest& request) const {
  auto entries = List(request.directory_key());
  if (!entries.ok()) return entries.status();
  proto::GetKeyValueDirResponse response;
  response.set_directory_key(request.directory_key());
  for (proto::KeyValueEntry& entry : *entries) *response.add_kv() = std::move(entry);
  return response;
}

absl::StatusOr<proto::ReduceKeyValueDirResponse> KvStore::Read(
    const proto::ReduceKeyValueDirRequest& request) const {
  auto reduced = Reduce(request.directory_key(), request.op());
  if (!reduced.ok()) return reduced.status();
  proto::ReduceKeyValueDirResponse response;
  response.set_value(reduced->value);
  response.set_count(reduced->count);
  return response;
}

}  // namespace muster
