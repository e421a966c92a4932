#include "muster/actors/health/preemption.h"

#include <algorithm>
#include <utility>

namespace muster {

Preemption::Preemption(proto::PreemptionNotice notice, absl::flat_hash_set<uint32_t> waiting)
    : notice_(std::move(notice)), waiting_(std::move(waiting)) {
  DecideIfDone();
}

std::optional<int64_t> Preemption::Answer(uint32_t index, std::optional<int64_t> step) {
  if (sync_step_ || waiting_.erase(index) == 0) return std::nullopt;
  if (step) max_step_ = max_step_ ? std::max(*max_step_, *step) : *step;
  return DecideIfDone();
}

std::optional<int64_t> Preemption::Drop(uint32_t index) {
  if (sync_step_ || waiting_.erase(index) == 0) return std::nullopt;
  return DecideIfDone();
}

std::optional<int64_t> Preemption::DecideIfDone() {
  if (sync_step_ || !waiting_.empty()) return std::nullopt;
  // A step of INT64_MAX cannot be followed; every task then stops at it.
  sync_step_ = !max_step_ ? 0 : *max_step_ == INT64_MAX ? *max_step_ : *max_step_ + 1;
  return sync_step_;
}

}  // namespace muster
