// The steps that connected tasks report on their heartbeats, and the rule that finds stuck
// tasks among them: pure logic, without actors or a clock (every time is an input), which the
// coordinator feeds and asks on a timer.
//
// A task that reports steps is stuck when
//   STALLED: a task of its job moved to a step above this task's step at least
//            `stuck_after` + `grace` ago, and this task has reported no new step since. The
//            stall counts from when the others moved past it, not from when its own step last
//            changed: a job that pauses as a whole is never stuck, also not when it resumes
//            and the new steps of some tasks reach the leader a heartbeat later than those of
//            others. `grace` is how late a step may reach the leader (the heartbeat interval).
//            A task ahead of the others is never passed, so never stalled.
//   LAGGING: its step is more than `max_step_lag` behind the median step of its job.
// A task's first report tells where it is: it is no move and passes nobody. A task that is
// forgotten (it left) no longer counts as having moved past anyone: the tasks behind it wait
// to be passed again by a task still there. Each task is reported once, until its step changes
// or it is forgotten (a new incarnation).
//
//   (unknown) --Report--> WAITING --a task of its job moves above its step--> PASSED
//       ^                    ^                                                   |
//       |                    +--- its step changes, or a task ahead of it leaves -+
//       +--- Forget (from either state)
//   A task PASSED for stuck_after + grace is STALLED (reported once per step).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <absl/status/status.h>

#include "muster/proto/coordination_config.pb.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

struct StuckPolicy {
  using Duration = std::chrono::nanoseconds;
  Duration stuck_after{0};   // 0: no STALLED rule
  int64_t max_step_lag = 0;  // 0: no LAGGING rule
  Duration grace{0};         // how late a step may arrive: the heartbeat interval
  bool enabled() const { return stuck_after.count() > 0 || max_step_lag > 0; }
  // Reads stuck_after_ms and max_step_lag (negative values turn a rule off); grace stays 0.
  static StuckPolicy FromConfig(const proto::CoordinationServiceConfig& config);
};

class ProgressTracker {
 public:
  // The actor clock's time points (caf::actor_clock::time_point is this type).
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = StuckPolicy::Duration;

  explicit ProgressTracker(StuckPolicy policy = {}) : policy_(policy) {}

  // Records that `task` (at `index` of the cluster) reports `step` at `now`. A new step of a
  // task that was tracked already is a move: it passes the tasks of its job below it.
  void Report(uint32_t index, const proto::CoordinatedTask& task, int64_t step, TimePoint now);
  // Forgets the task at `index` (it disconnected, failed or registered a new incarnation).
  void Forget(uint32_t index);

  // The last step of the task at `index`, and when it changed; nullopt when it reports none.
  std::optional<int64_t> Step(uint32_t index) const;
  std::optional<TimePoint> StepChangedAt(uint32_t index) const;
  // When a task of its job first moved past that step; nullopt while none did.
  std::optional<TimePoint> PassedAt(uint32_t index) const;

  // The tasks stuck at `now` that were not reported yet; each is marked reported.
  std::vector<proto::TaskStuck> FindStuck(TimePoint now);

  const StuckPolicy& policy() const { return policy_; }
  void set_policy(StuckPolicy policy) { policy_ = policy; }

 private:
  using Key = std::pair<int64_t, uint32_t>;  // (step, index): a job's tasks ordered by step
  struct Entry {
    bool tracked = false;
    proto::CoordinatedTask task;
    int64_t step = 0;
    TimePoint changed_at;
    std::optional<TimePoint> passed_at;
    bool reported = false;
  };
  struct Job {
    std::set<uint32_t> members;  // tracked tasks, in cluster order
    std::set<Key> waiting;       // members nobody moved past yet
    std::set<Key> passed;        // the others (passed_at set)
  };

  const Entry* Tracked(uint32_t index) const;
  // Takes `index` out of the job's waiting or passed set.
  void Unlist(Job& job, uint32_t index);
  // A task of `job` moved to `step` at `now`: every waiting task below it is passed.
  void PassBelow(Job& job, int64_t step, TimePoint now);
  // A task at `step` left `job`: the passed tasks below it wait again.
  void UnpassBelow(Job& job, int64_t step);
  // Appends the stuck tasks of `job`.
  void FindStuckInJob(const Job& job, TimePoint now, std::vector<proto::TaskStuck>& stuck);

  StuckPolicy policy_;
  std::vector<Entry> entries_;       // by cluster index
  std::map<std::string, Job> jobs_;  // by job name; only jobs with a tracked task
};

// The error a stuck task fails with: DeadlineExceeded, naming the task, its step, the steps
// of its job and for how long, with the TaskStuck in its coordination payload.
absl::Status StuckTaskError(const proto::TaskStuck& stuck);

}  // namespace muster
