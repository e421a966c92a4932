// The preemption protocol's bookkeeping, without actors. One task notifies the service of a
// coming preemption; the service sends every connected task the notice and waits for each
// one's answer (its last step), dropping tasks that fail or leave meanwhile. The sync step, at
// which every task stops, is the highest step answered plus one (0 when no task reports steps).
//
//   COLLECTING --last answer, or the last task we waited for left--> DECIDED(sync step)
#pragma once

#include <cstdint>
#include <optional>

#include <absl/container/flat_hash_set.h>

#include "muster/proto/coordination_service.pb.h"

namespace muster {

class Preemption {
 public:
  // Waits for the answers of the tasks at `waiting` (cluster indices).
  Preemption(proto::PreemptionNotice notice, absl::flat_hash_set<uint32_t> waiting);

  // Records the answer of the task at `index`; returns the sync step when this decides it.
  std::optional<int64_t> Answer(uint32_t index, std::optional<int64_t> step);
  // The task at `index` failed or left before answering; returns the sync step when this
  // decides it.
  std::optional<int64_t> Drop(uint32_t index);

  // The sync step once decided.
  std::optional<int64_t> sync_step() const { return sync_step_; }
  const proto::PreemptionNotice& notice() const { return notice_; }
  bool IsWaitingFor(uint32_t index) const { return waiting_.contains(index); }

 private:
  std::optional<int64_t> DecideIfDone();

  proto::PreemptionNotice notice_;
  absl::flat_hash_set<uint32_t> waiting_;
  std::optional<int64_t> max_step_;
  std::optional<int64_t> sync_step_;
};

}  // namespace muster
