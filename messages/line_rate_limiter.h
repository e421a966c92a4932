// At most one log line a second from many threads, and a count of what was not logged: for the
// lines a flood could otherwise multiply (unexpected messages, protobuf's parse warnings).
// Lock-free; the caller gives the time, from its own clock (an actor's, or steady_clock where
// there is no actor).
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>

namespace muster {

class LineRateLimiter {
 public:
  // True for the one caller that may write a line now: none was written within the second
  // before `now_nanos`. A time behind the last line's comes from another clock (another actor
  // system's, in tests): it takes its turn.
  bool TakeTurn(int64_t now_nanos) {
    int64_t last = last_nanos_.load(std::memory_order_relaxed);
    if (last != kNever && now_nanos >= last && now_nanos - last < kNanosBetweenLines) {
      return false;
    }
    return last_nanos_.compare_exchange_strong(last, now_nanos, std::memory_order_relaxed);
  }
  // Counts an event (a line left out, or every event: the caller decides what it counts).
  void Count() { count_.fetch_add(1, std::memory_order_relaxed); }
  // What was counted since the last call.
  uint64_t TakeCount() { return count_.exchange(0, std::memory_order_relaxed); }
  // As new: no line written yet, nothing counted.
  void Reset() {
    last_nanos_.store(kNever, std::memory_order_relaxed);
    count_.store(0, std::memory_order_relaxed);
  }

 private:
  static constexpr int64_t kNanosBetweenLines = 1'000'000'000;
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::min();

  std::atomic<int64_t> last_nanos_{kNever};
  std::atomic<uint64_t> count_{0};
};

}  // namespace muster
