// Key normalisation and validation over arbitrary keys: normalising is idempotent, the
// directory is a prefix of the key, and nothing crashes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "muster/actors/kv/store/kv_key.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string key(reinterpret_cast<const char*>(data), size);
  std::string normalized = muster::NormalizeKey(key);
  if (muster::NormalizeKey(normalized) != normalized) std::abort();
  if (!muster::IsNormalizedKey(normalized)) std::abort();
  absl::string_view directory = muster::DirectoryOf(normalized);
  if (absl::string_view(normalized).substr(0, directory.size()) != directory) std::abort();
  muster::KvLimits limits;
  limits.max_key_bytes = 64;
  (void)muster::ValidateKey(key, normalized, limits);
  (void)muster::ValidateValue(normalized, key, limits);
  (void)muster::KeyForMessage(key);
  return 0;
}
