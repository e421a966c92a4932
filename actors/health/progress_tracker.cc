#include "muster/actors/health/progress_tracker.h"

#include <algorithm>
#include <chrono>
#include <map>

#include <absl/strings/str_cat.h>
#include <absl/time/time.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

int64_t Millis(std::chrono::nanoseconds span) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(span).count();
}

// The median of sorted `steps` (the mean of the middle two, rounded down, for an even count).
int64_t Median(const std::vector<int64_t>& steps) {
  size_t n = steps.size();
  if (n % 2 == 1) return steps[n / 2];
  __int128 sum = static_cast<__int128>(steps[n / 2 - 1]) + steps[n / 2];
  return static_cast<int64_t>(sum >= 0 ? sum / 2 : (sum - 1) / 2);  // rounded down
}

}  // namespace

StuckPolicy StuckPolicy::FromConfig(const proto::CoordinationServiceConfig& config) {
  StuckPolicy policy;
  policy.stuck_after = std::chrono::milliseconds(std::max<int64_t>(0, config.stuck_after_ms()));
  policy.max_step_lag = std::max<int64_t>(0, config.max_step_lag());
  return policy;
}

void ProgressTracker::Report(uint32_t index, const proto::CoordinatedTask& task, int64_t step,
                             TimePoint now) {
  if (index >= entries_.size()) entries_.resize(index + 1);
  Entry& entry = entries_[index];
  if (entry.tracked && entry.step == step) return;
  const bool moved = entry.tracked;  // a first report tells where the task is: no move
  if (!entry.tracked) {
    entry.tracked = true;
    entry.task = task;
  }
  Job& job = jobs_[entry.task.job_name()];
  // The task's key goes to the waiting set at its new step: a move reuses its node.
  std::set<Key>::node_type node;
  if (moved) {
    node = (entry.passed_at ? job.passed : job.waiting).extract({entry.step, index});
  } else {
    job.members.insert(index);
  }
  entry.step = step;
  entry.changed_at = now;
  entry.passed_at.reset();
  entry.reported = false;
  if (node) {
    node.value() = {step, index};
    job.waiting.insert(std::move(node));
  } else {
    job.waiting.insert({step, index});
  }
  if (moved) PassBelow(job, step, now);
}

void ProgressTracker::Forget(uint32_t index) {
  if (Tracked(index) == nullptr) return;
  Entry& entry = entries_[index];
  auto job = jobs_.find(entry.task.job_name());
  Unlist(job->second, index);
  job->second.members.erase(index);
  UnpassBelow(job->second, entry.step);
  if (job->second.members.empty()) jobs_.erase(job);
  entry = Entry{};
}

const ProgressTracker::Entry* ProgressTracker::Tracked(uint32_t index) const {
  return index < entries_.size() && entries_[index].tracked ? &entries_[index] : nullptr;
}

void ProgressTracker::Unlist(Job& job, uint32_t index) {
  const Entry& entry = entries_[index];
  (entry.passed_at ? job.passed : job.waiting).erase({entry.step, index});
}

void ProgressTracker::PassBelow(Job& job, int64_t step, TimePoint now) {
  auto end = job.waiting.lower_bound({step, 0});
  for (auto it = job.waiting.begin(); it != end;) {
    entries_[it->second].passed_at = now;
    job.passed.insert(job.waiting.extract(it++));
  }
}

void ProgressTracker::UnpassBelow(Job& job, int64_t step) {
  auto end = job.passed.lower_bound({step, 0});
  for (auto it = job.passed.begin(); it != end;) {
    entries_[it->second].passed_at.reset();
    job.waiting.insert(job.passed.extract(it++));
  }
}

std::optional<int64_t> ProgressTracker::Step(uint32_t index) const {
  const Entry* entry = Tracked(index);
  return entry ? std::optional<int64_t>(entry->step) : std::nullopt;
}

std::optional<ProgressTracker::TimePoint> ProgressTracker::StepChangedAt(uint32_t index) const {
  const Entry* entry = Tracked(index);
  return entry ? std::optional<TimePoint>(entry->changed_at) : std::nullopt;
}

std::optional<ProgressTracker::TimePoint> ProgressTracker::PassedAt(uint32_t index) const {
  const Entry* entry = Tracked(index);
  return entry ? entry->passed_at : std::nullopt;
}

std::vector<proto::TaskStuck> ProgressTracker::FindStuck(TimePoint now) {
  std::vector<proto::TaskStuck> stuck;
  if (!policy_.enabled()) return stuck;
  for (const auto& [name, job] : jobs_) FindStuckInJob(job, now, stuck);
  return stuck;
}

void ProgressTracker::FindStuckInJob(const Job& job, TimePoint now,
                                     std::vector<proto::TaskStuck>& stuck) {
  if (job.members.size() < 2) return;  // a task alone has nobody to be compared with
  // Every member is in `waiting` or `passed`, each ordered by step: merged, the steps in order.
  std::vector<int64_t> steps;
  steps.reserve(job.waiting.size() + job.passed.size());
  auto w = job.waiting.begin();
  auto p = job.passed.begin();
  while (w != job.waiting.end() || p != job.passed.end()) {
    const bool from_waiting = p == job.passed.end() || (w != job.waiting.end() && *w < *p);
    steps.push_back(from_waiting ? (w++)->first : (p++)->first);
  }
  const int64_t median = Median(steps);
  const bool stall_rule = policy_.stuck_after.count() > 0;
  for (uint32_t i : job.members) {
    Entry& entry = entries_[i];
    if (entry.reported) continue;
    proto::TaskStuck::Reason reason = proto::TaskStuck::REASON_UNSPECIFIED;
    if (stall_rule && entry.passed_at &&
        now - *entry.passed_at >= policy_.stuck_after + policy_.grace) {
      reason = proto::TaskStuck::STALLED;
    } else if (policy_.max_step_lag > 0 &&
               static_cast<__int128>(median) - entry.step > policy_.max_step_lag) {
      reason = proto::TaskStuck::LAGGING;
    }
    if (reason == proto::TaskStuck::REASON_UNSPECIFIED) continue;
    entry.reported = true;
    proto::TaskStuck& report = stuck.emplace_back();
    report.set_reason(reason);
    *report.mutable_task() = entry.task;
    report.set_step(entry.step);
    report.set_stalled_for_ms(Millis(now - entry.changed_at));
    // The others: the sorted steps without one copy of this task's step.
    report.set_min_other_step(entry.step == steps.front() ? steps[1] : steps.front());
    report.set_max_other_step(entry.step == steps.back() ? steps[steps.size() - 2] : steps.back());
    report.set_median_step(median);
  }
}

absl::Status StuckTaskError(const proto::TaskStuck& stuck) {
  std::string name = TaskNameForMessage(stuck.task());
  std::string others = absl::StrCat(
      "the other tasks of job ", stuck.task().job_name(), " are at steps ", stuck.min_other_step(),
      " to ", stuck.max_other_step(), " (job median ", stuck.median_step(), ")");
  std::string stalled = absl::FormatDuration(absl::Milliseconds(stuck.stalled_for_ms()));
  std::string message =
      stuck.reason() == proto::TaskStuck::LAGGING
          ? absl::StrCat("Task ", name, " is stuck: its step ", stuck.step(),
                         " lags the median of ", "its job by more than the allowed lag (", others,
                         "; its step has not ", "changed for ", stalled,
                         "). Inspect that process (e.g. py-spy dump, ",
                         "gdb), or raise --max-step-lag if this much lag is normal.")
          : absl::StrCat("Task ", name, " is stuck: its step ", stuck.step(),
                         " has not advanced for ", stalled, " while ", others,
                         " and moved past it. Inspect that process (e.g. py-spy dump, gdb), or ",
                         "raise --stuck-after if its steps are this slow.");
  return MakeStuckTaskError(absl::DeadlineExceededError(message), stuck);
}

}  // namespace muster
