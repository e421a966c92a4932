#include "muster/net/agent/calls/call_deadlines.h"

namespace muster {

std::optional<CallDeadlines::TimePoint> CallDeadlines::Add(uint64_t id, TimePoint deadline) {
  by_id_[id] = by_time_.emplace(deadline, id);
  if (armed_ && *armed_ <= deadline) return std::nullopt;
  armed_ = deadline;
  return deadline;
}

void CallDeadlines::Remove(uint64_t id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  by_time_.erase(it->second);
  by_id_.erase(it);
}

std::vector<uint64_t> CallDeadlines::TakeExpired(TimePoint now, std::optional<TimePoint>& rearm) {
  std::vector<uint64_t> expired;
  while (!by_time_.empty() && by_time_.begin()->first <= now) {
    expired.push_back(by_time_.begin()->second);
    by_id_.erase(by_time_.begin()->second);
    by_time_.erase(by_time_.begin());
  }
  // A timer armed for later than `now` is still pending (this was an earlier one); otherwise
  // the next deadline needs one.
  if (armed_ && *armed_ <= now) armed_.reset();
  rearm.reset();
  if (!armed_ && !by_time_.empty()) {
    armed_ = by_time_.begin()->first;
    rearm = armed_;
  }
  return expired;
}

}  // namespace muster
