// Deadlines of an actor's outstanding calls without a clock event per call. CAF 0.17 gives
// every request with a finite timeout its own timer on the clock thread and wakes that thread to
// set it and again to cancel it; on the development VM that costs ~20 µs per call, a third of
// a TryGet (docs/performance.md). An actor that sends its calls with caf::infinite and registers
// their deadlines here keeps one timer for the earliest deadline instead: with one timeout for
// all calls, one timer per timeout period.
//
//   Add(id, deadline) --answered--> Remove(id)
//                     \--the timer finds it due--> TakeExpired() returns id: fail the call
// The owner arms a timer (delayed_send) whenever Add or TakeExpired says so, and calls
// TakeExpired when it fires. Pure logic, no CAF scheduling.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <caf/actor_clock.hpp>

namespace muster {

class CallDeadlines {
 public:
  using TimePoint = caf::actor_clock::time_point;

  // Registers call `id` (not registered yet). Returns the time to arm a timer for when this
  // deadline is earlier than every armed one; nullopt when the armed timer covers it.
  std::optional<TimePoint> Add(uint64_t id, TimePoint deadline);
  // The call was answered (or failed otherwise); unknown ids are ignored.
  void Remove(uint64_t id);
  // A timer fired at `now`: removes and returns the calls due by then, in deadline order, and
  // sets `rearm` to the time of the next timer to arm (nullopt: none needed).
  std::vector<uint64_t> TakeExpired(TimePoint now, std::optional<TimePoint>& rearm);

  size_t size() const { return by_id_.size(); }

 private:
  std::multimap<TimePoint, uint64_t> by_time_;
  absl::flat_hash_map<uint64_t, std::multimap<TimePoint, uint64_t>::iterator> by_id_;
  std::optional<TimePoint> armed_;  // the earliest timer pending
};

}  // namespace muster
