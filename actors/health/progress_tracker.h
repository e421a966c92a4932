// The steps that connected tasks report on their heartbeats, and the rule that finds stuck
// tasks among them, without actors: the coordinator feeds it and asks it on a timer.
//
// A task that reports steps is stuck when
//   STALLED: its step has not changed for `stuck_after`, while another task of its job with a
//            higher step advanced within the last `stuck_after` (so a job that pauses as a
//            whole, or a task ahead of the others, is never stuck), or
//   LAGGING: its step is more than `max_step_lag` behind the median step of its job.
// Each task is reported once, until its step changes or it is forgotten (a new incarnation).
//
//   (unknown) --Report--> TRACKED --FindStuck finds it--> REPORTED --Report(new step)--> TRACKED
//       ^                    |                               |
//       +------Forget--------+-------------------------------+
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <caf/actor_clock.hpp>

#include "muster/proto/coordination_config.pb.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

struct StuckPolicy {
  caf::timespan stuck_after{0};  // 0: no STALLED rule
  int64_t max_step_lag = 0;      // 0: no LAGGING rule
  bool enabled() const { return stuck_after.count() > 0 || max_step_lag > 0; }
  // Reads stuck_after_ms and max_step_lag (negative values turn a rule off).
  static StuckPolicy FromConfig(const proto::CoordinationServiceConfig& config);
};

class ProgressTracker {
 public:
  using TimePoint = caf::actor_clock::time_point;

  explicit ProgressTracker(StuckPolicy policy = {}) : policy_(policy) {}

  // Records that `task` (at `index` of the cluster) reports `step` at `now`.
  void Report(uint32_t index, const proto::CoordinatedTask& task, int64_t step, TimePoint now);
  // Forgets the task at `index` (it disconnected, failed or registered a new incarnation).
  void Forget(uint32_t index);

  // The last step of the task at `index`, and when it changed; nullopt when it reports none.
  std::optional<int64_t> Step(uint32_t index) const;
  std::optional<TimePoint> StepChangedAt(uint32_t index) const;

  // The tasks stuck at `now` that were not reported yet; each is marked reported.
  std::vector<proto::TaskStuck> FindStuck(TimePoint now);

  const StuckPolicy& policy() const { return policy_; }
  void set_policy(StuckPolicy policy) { policy_ = policy; }

 private:
  struct Entry {
    bool tracked = false;
    proto::CoordinatedTask task;
    int64_t step = 0;
    TimePoint changed_at;
    bool reported = false;
  };
  // Appends the stuck tasks of the tracked entries `job` (indices into entries_).
  void FindStuckInJob(const std::vector<uint32_t>& job, TimePoint now,
                      std::vector<proto::TaskStuck>& stuck);

  StuckPolicy policy_;
  std::vector<Entry> entries_;  // by cluster index
};

// The error a stuck task fails with: DeadlineExceeded, naming the task, its step, the steps
// of its job and for how long, with the TaskStuck in its coordination payload.
absl::Status StuckTaskError(const proto::TaskStuck& stuck);

}  // namespace muster
