#include "muster/actors/kv/store/kv_key.h"

#include <absl/strings/str_cat.h>

namespace muster {
namespace {

// Keys longer than this are shortened in error messages.
constexpr size_t kMaxKeyInMessage = 128;

int64_t OrDefault(int64_t value, int64_t fallback) { return value > 0 ? value : fallback; }

}  // namespace

KvLimits KvLimits::FromConfig(const proto::CoordinationServiceConfig& config) {
  KvLimits limits;
  limits.max_key_bytes = OrDefault(config.max_key_bytes(), kDefaultMaxKeyBytes);
  limits.max_value_bytes = OrDefault(config.max_value_bytes(), kDefaultMaxValueBytes);
  limits.max_keys_per_directory =
      OrDefault(config.max_keys_per_directory(), kDefaultMaxKeysPerDirectory);
  limits.max_directories = OrDefault(config.max_directories(), kDefaultMaxDirectories);
  limits.budget =
      std::make_shared<KvBudget>(OrDefault(config.max_store_bytes(), kDefaultMaxStoreBytes));
  return limits;
}

bool KvBudget::Reserve(int64_t bytes) {
  int64_t current = used_.load(std::memory_order_relaxed);
  do {
    if (current + bytes > limit_) return false;
  } while (!used_.compare_exchange_weak(current, current + bytes, std::memory_order_relaxed));
  return true;
}

std::string NormalizeKey(absl::string_view key) {
  std::string normalized;
  normalized.reserve(key.size());
  bool pending_slash = false;
  for (char c : key) {
    if (c == '/') {
      pending_slash = !normalized.empty();
      continue;
    }
    if (pending_slash) normalized.push_back('/');
    pending_slash = false;
    normalized.push_back(c);
  }
  return normalized;
}

bool IsNormalizedKey(absl::string_view key) {
  if (key.empty()) return true;
  if (key.front() == '/' || key.back() == '/') return false;
  return key.find("//") == absl::string_view::npos;
}

absl::string_view DirectoryOf(absl::string_view normalized_key) {
  return normalized_key.substr(0, normalized_key.find('/'));
}

std::string KeyForMessage(absl::string_view key) {
  if (key.size() <= kMaxKeyInMessage) return std::string(key);
  return absl::StrCat(key.substr(0, kMaxKeyInMessage), "... (", key.size(), " bytes)");
}

absl::Status ValidateKey(absl::string_view given, absl::string_view normalized,
                         const KvLimits& limits) {
  if (normalized.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("key \"", KeyForMessage(given),
                     "\" is empty once normalised; name a key such as \"directory/name\""));
  }
  if (static_cast<int64_t>(normalized.size()) > limits.max_key_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "key ", KeyForMessage(normalized), " is ", normalized.size(), " bytes, over the limit of ",
        limits.max_key_bytes, " bytes (the leader's --max-key-size); use a shorter key"));
  }
  return absl::OkStatus();
}

absl::Status ValidateValue(absl::string_view key, absl::string_view value, const KvLimits& limits) {
  if (static_cast<int64_t>(value.size()) <= limits.max_value_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("value for key ", KeyForMessage(key), " is ", value.size(),
                   " bytes, over the limit of ", limits.max_value_bytes,
                   " bytes (the leader's --max-value-size); store a smaller value, or start the "
                   "leader with a larger --max-value-size"));
}

absl::Status ValidateDirectoryCapacity(absl::string_view directory, absl::string_view key,
                                       int64_t num_keys, const KvLimits& limits) {
  if (num_keys < limits.max_keys_per_directory) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("cannot add key ", KeyForMessage(key), ": directory ", KeyForMessage(directory),
                   " holds ", num_keys, " keys, the limit of ", limits.max_keys_per_directory,
                   " (the leader's --max-keys-per-directory); delete keys (muster kv rm), or start "
                   "the leader with a larger --max-keys-per-directory"));
}

absl::Status CheckWaitForKeys(const proto::WaitForKeysRequest& request, const KvLimits& limits) {
  if (request.count() < 1 || request.count() > limits.max_keys_per_directory) {
    return absl::InvalidArgumentError(absl::StrCat(
        "WaitForKeys of ", KeyForMessage(request.directory_key()), " asks for ", request.count(),
        " keys; give 1 to ", limits.max_keys_per_directory, " (the most a directory holds)"));
  }
  if (request.timeout_in_ms() < 0 || request.timeout_in_ms() > kMaxGetTimeoutMs) {
    return absl::InvalidArgumentError(
        absl::StrCat("WaitForKeys of ", KeyForMessage(request.directory_key()),
                     " has a timeout of ", request.timeout_in_ms(), " ms; give 1 to ",
                     kMaxGetTimeoutMs, " ms (a year), or 0 to wait without a deadline"));
  }
  return absl::OkStatus();
}

}  // namespace muster
