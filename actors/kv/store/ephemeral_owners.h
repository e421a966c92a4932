// Which live incarnations own ephemeral keys, by task index: when such an incarnation ends, the
// coordinator tells every key-value directory to drop its keys. Most incarnations own none, and
// their end then costs no message at all.
#pragma once

#include <cstdint>
#include <vector>

namespace muster {

class EphemeralOwners {
 public:
  EphemeralOwners() = default;
  explicit EphemeralOwners(size_t tasks) : owns_(tasks, false) {}

  // The live incarnation of the task at `index` owns keys (it wrote one, or a restarted leader
  // recovered its keys).
  void Mark(uint32_t index) { owns_[index] = true; }
  bool Owns(uint32_t index) const { return owns_[index]; }
  // The incarnation of the task at `index` ended: true when it owned keys (to drop now).
  bool Ended(uint32_t index) {
    bool owned = owns_[index];
    owns_[index] = false;
    return owned;
  }

 private:
  std::vector<bool> owns_;
};

}  // namespace muster
