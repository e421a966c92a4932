// The processes whose task a restart replaced. When the coordinator restarts a task that a
// launcher runs (one task, or every task in a new round), the process that held it is fenced:
// every request it still sends (a call in flight, or one made before its launcher stops it) is
// refused, so that nothing of the old generation reaches the new one's key-value store,
// barriers or registration. A process is its CAF node: a launcher always starts a task's next
// generation as a new process. Plain data, bounded: the oldest entries go first.
#pragma once

#include <cstdint>
#include <deque>

#include <absl/container/flat_hash_map.h>
#include <absl/status/status.h>
#include <caf/node_id.hpp>

#include "muster/proto/coordination_service.pb.h"

namespace muster {

class ProcessFence {
 public:
  // What a fenced process ran: its task, the generation it was started for, and the round.
  struct Replaced {
    proto::CoordinatedTask task;
    int64_t generation = 0;
    int64_t round = 0;
  };

  explicit ProcessFence(size_t capacity = 65'536) : capacity_(capacity) {}

  // Fences `node`, which ran `replaced`; a null node is ignored, and so is a node fenced
  // already (its first entry stays).
  void Fence(const caf::node_id& node, Replaced replaced);
  // OK for a node that is not fenced; FailedPrecondition naming the task, the generation and
  // round it ran, and the job's `round` now, for one that is.
  absl::Status Check(const caf::node_id& node, int64_t round) const;
  bool IsFenced(const caf::node_id& node) const { return fenced_.contains(node); }
  size_t size() const { return fenced_.size(); }

 private:
  size_t capacity_;
  absl::flat_hash_map<caf::node_id, Replaced> fenced_;
  std::deque<caf::node_id> order_;  // oldest first
};

}  // namespace muster
