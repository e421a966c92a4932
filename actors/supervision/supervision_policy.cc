#include "muster/actors/supervision/supervision_policy.h"

#include <algorithm>
#include <map>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>

namespace muster {

FailureDecision FateSharing::OnTaskFailure(const proto::CoordinatedTask&, const absl::Status& error,
                                           absl::Time) {
  return {FailureAction::kPropagateToCluster, error};
}

FailureDecision JobScoped::OnTaskFailure(const proto::CoordinatedTask&, const absl::Status& error,
                                         absl::Time) {
  return {FailureAction::kPropagateToJob, error};
}

RecoverableJobs::RecoverableJobs(std::vector<std::string> jobs) : jobs_(jobs.begin(), jobs.end()) {}

FailureDecision RecoverableJobs::OnTaskFailure(const proto::CoordinatedTask& task,
                                               const absl::Status& error, absl::Time) {
  if (IsRecoverable(task)) return {FailureAction::kTolerate, error};
  return {FailureAction::kPropagateToCluster, error};
}

bool RecoverableJobs::IsRecoverable(const proto::CoordinatedTask& task) const {
  return jobs_.contains(task.job_name());
}

std::string RecoverableJobs::Describe() const {
  std::vector<std::string> names(jobs_.begin(), jobs_.end());
  std::sort(names.begin(), names.end());
  return absl::StrCat("recoverable jobs: ", absl::StrJoin(names, ","));
}

RestartIntensity::RestartIntensity(std::unique_ptr<SupervisionPolicy> inner, int max_failures,
                                   absl::Duration period)
    : inner_(std::move(inner)), max_failures_(max_failures), period_(period) {}

FailureDecision RestartIntensity::OnTaskFailure(const proto::CoordinatedTask& task,
                                                const absl::Status& error, absl::Time now) {
  std::vector<Failure>& failures = failures_[task.job_name()];
  failures.erase(std::remove_if(failures.begin(), failures.end(),
                                [&](const Failure& f) { return now - f.time >= period_; }),
                 failures.end());
  failures.push_back({now, task.task_id()});
  if (static_cast<int>(failures.size()) <= max_failures_) {
    return inner_->OnTaskFailure(task, error, now);
  }
  // Which tasks failed how often, by task id.
  std::map<int32_t, int> counts;
  for (const Failure& f : failures) ++counts[f.task_id];
  std::vector<std::string> parts;
  for (const auto& [id, count] : counts) {
    parts.push_back(absl::StrCat("/job:", task.job_name(), "/task:", id, " ", count,
                                 count == 1 ? " time" : " times"));
  }
  return {
      FailureAction::kFailJob,
      absl::Status(error.code(),
                   absl::StrCat("job ", task.job_name(), " failed: ", failures.size(),
                                " task failures within ", absl::FormatDuration(period_),
                                " exceed the restart intensity of ", max_failures_, " (",
                                absl::StrJoin(parts, ", "), "); last failure: ", error.message()))};
}

bool RestartIntensity::IsRecoverable(const proto::CoordinatedTask& task) const {
  return inner_->IsRecoverable(task);
}

std::string RestartIntensity::Describe() const {
  return absl::StrCat(inner_->Describe(), ", at most ", max_failures_, " failures per job in ",
                      absl::FormatDuration(period_));
}

FailureDecision OneForOne::OnTaskFailure(const proto::CoordinatedTask&, const absl::Status& error,
                                         absl::Time) {
  return {FailureAction::kTolerate, error, RestartScope::kTask};
}

FailureDecision OneForAll::OnTaskFailure(const proto::CoordinatedTask&, const absl::Status& error,
                                         absl::Time) {
  return {FailureAction::kPropagateToCluster, error, RestartScope::kAll};
}

std::unique_ptr<SupervisionPolicy> DefaultPolicy(const std::vector<std::string>& recoverable_jobs) {
  if (recoverable_jobs.empty()) return std::make_unique<FateSharing>();
  return std::make_unique<RecoverableJobs>(recoverable_jobs);
}

}  // namespace muster
