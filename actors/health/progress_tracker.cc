#include "muster/actors/health/progress_tracker.h"

#include <algorithm>
#include <chrono>
#include <map>

#include <absl/strings/str_cat.h>
#include <absl/time/time.h>

#include "muster/messages/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

int64_t Millis(caf::timespan span) {
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
  if (!entry.tracked) entry.task = task;
  entry.tracked = true;
  entry.step = step;
  entry.changed_at = now;
  entry.reported = false;
}

void ProgressTracker::Forget(uint32_t index) {
  if (index < entries_.size()) entries_[index] = Entry{};
}

std::optional<int64_t> ProgressTracker::Step(uint32_t index) const {
  if (index >= entries_.size() || !entries_[index].tracked) return std::nullopt;
  return entries_[index].step;
}

std::optional<ProgressTracker::TimePoint> ProgressTracker::StepChangedAt(uint32_t index) const {
  if (index >= entries_.size() || !entries_[index].tracked) return std::nullopt;
  return entries_[index].changed_at;
}

std::vector<proto::TaskStuck> ProgressTracker::FindStuck(TimePoint now) {
  std::vector<proto::TaskStuck> stuck;
  if (!policy_.enabled()) return stuck;
  std::map<std::string, std::vector<uint32_t>> jobs;
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].tracked) jobs[entries_[i].task.job_name()].push_back(i);
  }
  for (const auto& [name, job] : jobs) FindStuckInJob(job, now, stuck);
  return stuck;
}

void ProgressTracker::FindStuckInJob(const std::vector<uint32_t>& job, TimePoint now,
                                     std::vector<proto::TaskStuck>& stuck) {
  if (job.size() < 2) return;  // a task alone has nobody to be compared with
  std::vector<int64_t> steps;
  steps.reserve(job.size());
  for (uint32_t i : job) steps.push_back(entries_[i].step);
  std::sort(steps.begin(), steps.end());
  const int64_t median = Median(steps);
  const bool stall_rule = policy_.stuck_after.count() > 0;
  for (uint32_t i : job) {
    Entry& entry = entries_[i];
    if (entry.reported) continue;
    caf::timespan stalled = now - entry.changed_at;
    int64_t min_other = INT64_MAX;
    int64_t max_other = INT64_MIN;
    bool others_advance = false;  // a task ahead of this one advanced recently
    for (uint32_t j : job) {
      if (j == i) continue;
      const Entry& other = entries_[j];
      min_other = std::min(min_other, other.step);
      max_other = std::max(max_other, other.step);
      others_advance |= other.step > entry.step && now - other.changed_at < policy_.stuck_after;
    }
    proto::TaskStuck::Reason reason = proto::TaskStuck::REASON_UNSPECIFIED;
    if (stall_rule && stalled >= policy_.stuck_after && others_advance) {
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
    report.set_stalled_for_ms(Millis(stalled));
    report.set_min_other_step(min_other);
    report.set_max_other_step(max_other);
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
                         " and advancing. Inspect that process (e.g. py-spy dump, gdb), or ",
                         "raise --stuck-after if its steps are this slow.");
  return MakeStuckTaskError(absl::DeadlineExceededError(message), stuck);
}

}  // namespace muster
