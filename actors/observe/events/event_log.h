// The job's event log, free of CAF: the last events of a leader in a ring (4096 by default),
// numbered 1, 2, ... as they are appended, each stamped with the leader's monotonic clock and
// the wall time derived from it; the slices that WatchEvents answers with; and the JSON line of
// an event (muster serve --events, muster events --json; docs/operations.md, "The event log").
// The event log actor (event_log_actor.h) owns one and feeds it the events of the coordinator.
//
//   EMPTY --Append--> KEEPING(first_kept_seq = 1) --Append at capacity--> KEEPING(oldest dropped)
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include <absl/strings/string_view.h>
#include <absl/time/time.h>

#include "muster/proto/observe.pb.h"

namespace muster {

// How many events a leader keeps, the most one WatchEvents call returns, and the longest it
// waits for the next event.
inline constexpr size_t kEventLogCapacity = 4096;
inline constexpr int32_t kMaxWatchEvents = 1024;
inline constexpr int64_t kMaxWatchWaitMs = 60'000;
// The most tasks a barrier event lists in waiting_for (waiting_count counts them all).
inline constexpr int kMaxEventWaitingFor = 64;

class EventLog {
 public:
  // `wall_base` is the wall time at the monotonic reading `monotonic_base_ns`: an event's
  // unix_ms is wall_base + (its monotonic_ns - monotonic_base_ns), so that wall time never
  // jumps within one leader. `capacity` >= 1.
  EventLog(absl::Time wall_base, int64_t monotonic_base_ns, size_t capacity = kEventLogCapacity);

  // Stamps `event` with the next seq, `monotonic_ns` and its wall time, keeps it (dropping the
  // oldest event when the ring is full) and returns the kept event.
  const proto::JobEvent& Append(proto::JobEvent event, int64_t monotonic_ns);

  // The kept events after `after_seq`, oldest first, at most `max_events` (>= 1): the oldest
  // of them, or with `newest` the newest; with first_kept_seq, last_seq and the first failure.
  // An `after_seq` before the oldest kept event starts at the oldest (the reader sees what it
  // lost from first_kept_seq).
  proto::WatchEventsResponse After(int64_t after_seq, int32_t max_events,
                                   bool newest = false) const;

  // True when an event after `after_seq` is kept.
  bool HasAfter(int64_t after_seq) const { return last_seq_ > after_seq; }
  // The newest event's seq (0: none yet) and the oldest kept one's (last_seq + 1 when empty).
  int64_t last_seq() const { return last_seq_; }
  int64_t first_kept_seq() const { return last_seq_ - static_cast<int64_t>(ring_.size()) + 1; }
  size_t size() const { return ring_.size(); }

 private:
  absl::Time wall_base_;
  int64_t monotonic_base_ns_;
  size_t capacity_;
  int64_t last_seq_ = 0;
  std::deque<proto::JobEvent> ring_;  // seqs first_kept_seq() .. last_seq_, in order
  proto::JobEvent first_failure_;     // kind unset until a task failed
};

// The event as one line of JSON (without the newline): an object with the keys seq,
// monotonic_ns, unix_ms, time (RFC 3339, UTC, milliseconds), kind (the JobEventKind's name), and
// those of task (/job:NAME/task:ID), incarnation ("0x" and 16 hex digits), state (the
// CoordinatedTaskState's name), error_code (the absl code's name, e.g. "UNAVAILABLE"),
// error_message, barrier, counter, waiting_for (an array of task names), waiting_count, round
// and detail that are set. Strings are escaped so that the line is valid JSON whatever bytes
// they hold (bytes that are not UTF-8 become U+FFFD).
std::string EventJson(const proto::JobEvent& event);

// Appends `text` to `out` as a JSON string (quotes included), escaped as EventJson does.
void AppendJsonString(absl::string_view text, std::string* out);

// "2024-05-01T12:00:00.123Z": `unix_ms` in RFC 3339, UTC, with milliseconds.
std::string EventTimeUtc(int64_t unix_ms);

}  // namespace muster
