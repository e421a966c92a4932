// The liveness deadlines of the connected tasks, for the heartbeat monitor. Every deadline is
// "last beat + timeout" with one timeout, so deadlines are ordered as beats arrive: records go
// to the back of a FIFO and a beat only appends (O(1)); a record whose task has beaten since
// (or is no longer watched) is stale and dropped when it reaches the front. The FIFO is
// compacted when stale records outnumber live ones, so memory stays O(watched tasks). Tasks are
// named by their slot: the coordinator's dense index of the configured task.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include <caf/actor_clock.hpp>

#include "muster/actors/tasks/task_actor.h"

namespace muster {

class HeartbeatDeadlines {
 public:
  using TimePoint = caf::actor_clock::time_point;
  struct Expired {
    TaskActor actor;
    uint64_t incarnation = 0;
  };

  explicit HeartbeatDeadlines(caf::timespan timeout) : timeout_(timeout) {}

  // Starts (or restarts) watching the task in `slot`: its deadline is now + timeout.
  void Watch(uint32_t slot, uint64_t incarnation, TaskActor actor, TimePoint now);
  void Unwatch(uint32_t slot);
  // Moves the deadline of `slot` to now + timeout if it is watched with this incarnation;
  // returns false (and changes nothing) otherwise.
  bool Beat(uint32_t slot, uint64_t incarnation, TimePoint now);
  // Stops watching, and returns, every task whose deadline is <= now.
  std::vector<Expired> TakeExpired(TimePoint now);
  // The earliest deadline of a watched task.
  std::optional<TimePoint> Next();
  caf::timespan timeout() const { return timeout_; }

  size_t watched() const { return watched_; }
  size_t records() const { return records_.size(); }

 private:
  struct Entry {
    TaskActor actor;
    uint64_t incarnation = 0;
    uint32_t sequence = 0;  // of its live record
    bool watched = false;
  };
  struct Record {
    uint32_t slot;
    uint32_t sequence;
    TimePoint deadline;
  };

  bool IsLive(const Record& record) const;
  void Push(uint32_t slot, TimePoint now);
  void DropStaleFront();

  caf::timespan timeout_;
  std::vector<Entry> entries_;  // by slot
  std::deque<Record> records_;
  size_t watched_ = 0;
};

}  // namespace muster
