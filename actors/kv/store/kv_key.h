// Key-value keys and limits, without actors: the one normalisation of keys ('/'-separated
// paths), the sharding rule (a key belongs to the directory named by its first segment), the
// store's size limits, and the checks that turn bad keys and values into clear statuses.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <absl/status/status.h>
#include <absl/strings/string_view.h>

#include "muster/proto/coordination_config.pb.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

// The longest GetKeyValue / WaitForKeys timeout: a year (0: no deadline). Longer or negative
// ones are refused with InvalidArgument before they reach a directory.
inline constexpr int64_t kMaxGetTimeoutMs = int64_t{365} * 24 * 3600 * 1000;

// The bytes of keys and values held by every directory of one store, against its limit. The
// directory actors of a coordinator share one (a lock-free counter: each write reserves its
// growth before it is applied, so the total never exceeds the limit).
class KvBudget {
 public:
  explicit KvBudget(int64_t limit) : limit_(limit) {}
  // Takes `bytes` (> 0) of the budget; false when that would exceed the limit.
  bool Reserve(int64_t bytes);
  void Release(int64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  int64_t limit() const { return limit_; }

 private:
  const int64_t limit_;
  std::atomic<int64_t> used_{0};
};

// The size limits of the key-value store; see docs/protocol.md.
struct KvLimits {
  static constexpr int64_t kDefaultMaxKeyBytes = 4 << 10;
  static constexpr int64_t kDefaultMaxValueBytes = 4 << 20;
  static constexpr int64_t kDefaultMaxKeysPerDirectory = 1'000'000;
  static constexpr int64_t kDefaultMaxStoreBytes = int64_t{1} << 30;
  static constexpr int64_t kDefaultMaxDirectories = 100'000;

  int64_t max_key_bytes = kDefaultMaxKeyBytes;
  int64_t max_value_bytes = kDefaultMaxValueBytes;
  int64_t max_keys_per_directory = kDefaultMaxKeysPerDirectory;
  // Top-level directories, each an actor spawned on first use (reads and watches included).
  int64_t max_directories = kDefaultMaxDirectories;
  // Shared by every directory of the store; null: no total limit.
  std::shared_ptr<KvBudget> budget;

  // Reads the limits from `config` (a field that is 0 or negative keeps its default) and makes
  // one budget of max_store_bytes for the whole store.
  static KvLimits FromConfig(const proto::CoordinationServiceConfig& config);
};

// Returns `key` without leading slashes, with runs of '/' collapsed and without a trailing
// slash: "///a//b/c//" -> "a/b/c". The root ("", "/", "//") normalises to "".
std::string NormalizeKey(absl::string_view key);

// True when NormalizeKey(key) == key.
bool IsNormalizedKey(absl::string_view key);

// Returns the directory that owns a normalised key: its first segment ("nccl/id/3" -> "nccl",
// "nccl" -> "nccl", "" -> "").
absl::string_view DirectoryOf(absl::string_view normalized_key);

// Returns `key` for an error message: whole when short, else its first bytes and its size.
std::string KeyForMessage(absl::string_view key);

// Checks a normalised key. `given` is the key as the caller sent it (for the message).
// Possible errors: InvalidArgument (empty once normalised; longer than max_key_bytes).
absl::Status ValidateKey(absl::string_view given, absl::string_view normalized,
                         const KvLimits& limits);

// Checks the size of a value about to be stored under `key`.
// Possible errors: ResourceExhausted (longer than max_value_bytes).
absl::Status ValidateValue(absl::string_view key, absl::string_view value, const KvLimits& limits);

// Checks that `directory`, which holds `num_keys` keys, can take the new key `key`.
// Possible errors: ResourceExhausted (the directory holds max_keys_per_directory keys).
absl::Status ValidateDirectoryCapacity(absl::string_view directory, absl::string_view key,
                                       int64_t num_keys, const KvLimits& limits);

// Checks the count and timeout of a WaitForKeys call (not its directory).
// Possible errors: InvalidArgument (count outside 1..max_keys_per_directory, timeout outside
// 0..kMaxGetTimeoutMs).
absl::Status CheckWaitForKeys(const proto::WaitForKeysRequest& request, const KvLimits& limits);

}  // namespace muster
