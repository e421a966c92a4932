#include "muster/actors/tasks/heartbeat_deadlines.h"

#include <utility>

namespace muster {

bool HeartbeatDeadlines::IsLive(const Record& record) const {
  const Entry& entry = entries_[record.slot];
  return entry.watched && entry.sequence == record.sequence;
}

void HeartbeatDeadlines::Push(uint32_t slot, TimePoint now) {
  Entry& entry = entries_[slot];
  ++entry.sequence;
  records_.push_back({slot, entry.sequence, now + timeout_});
  if (records_.size() > 2 * watched_ + 1024) {
    std::deque<Record> live;
    for (const Record& record : records_) {
      if (IsLive(record)) live.push_back(record);
    }
    records_ = std::move(live);
  }
}

void HeartbeatDeadlines::Watch(uint32_t slot, uint64_t incarnation, TaskActor actor,
                               TimePoint now) {
  if (slot >= entries_.size()) entries_.resize(slot + 1);
  Entry& entry = entries_[slot];
  if (!entry.watched) ++watched_;
  entry.watched = true;
  entry.incarnation = incarnation;
  entry.actor = std::move(actor);
  Push(slot, now);
}

void HeartbeatDeadlines::Unwatch(uint32_t slot) {
  if (slot >= entries_.size() || !entries_[slot].watched) return;
  Entry& entry = entries_[slot];
  entry.watched = false;
  entry.actor = nullptr;
  --watched_;
}

bool HeartbeatDeadlines::Beat(uint32_t slot, uint64_t incarnation, TimePoint now) {
  if (slot >= entries_.size()) return false;
  const Entry& entry = entries_[slot];
  if (!entry.watched || entry.incarnation != incarnation) return false;
  Push(slot, now);
  return true;
}

void HeartbeatDeadlines::DropStaleFront() {
  while (!records_.empty() && !IsLive(records_.front())) records_.pop_front();
}

std::vector<HeartbeatDeadlines::Expired> HeartbeatDeadlines::TakeExpired(TimePoint now) {
  std::vector<Expired> expired;
  for (DropStaleFront(); !records_.empty() && records_.front().deadline <= now; DropStaleFront()) {
    Entry& entry = entries_[records_.front().slot];
    records_.pop_front();
    expired.push_back({std::move(entry.actor), entry.incarnation});
    entry.actor = nullptr;
    entry.watched = false;
    --watched_;
  }
  return expired;
}

std::optional<HeartbeatDeadlines::TimePoint> HeartbeatDeadlines::Next() {
  DropStaleFront();
  if (records_.empty()) return std::nullopt;
  return records_.front().deadline;
}

}  // namespace muster
