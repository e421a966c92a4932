#include "muster/net/leader/job_spec.h"

#include <absl/container/flat_hash_set.h>
#include <absl/strings/ascii.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>

namespace muster {
namespace {

absl::Status BadSpec(absl::string_view spec, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("bad job \"", spec, "\": ", why,
                   "; expected NAME=TASKS, e.g. worker=4, or NAME=MIN:MAX for an elastic job, e.g. "
                   "worker=2:8"));
}

}  // namespace

absl::StatusOr<proto::CoordinatedJob> ParseJobSpec(absl::string_view spec) {
  size_t equals = spec.find('=');
  if (equals == absl::string_view::npos) return BadSpec(spec, "no '='");
  absl::string_view name = spec.substr(0, equals);
  absl::string_view count = spec.substr(equals + 1);
  if (name.empty()) return BadSpec(spec, "the job name is empty");
  for (char c : name) {
    if (c == '/' || c == ':' || c == ',' || c == '=' || absl::ascii_isspace(c)) {
      return BadSpec(spec, absl::StrCat("the job name may not contain '", std::string(1, c), "'"));
    }
  }
  int32_t min_tasks = 0;
  size_t colon = count.find(':');
  if (colon != absl::string_view::npos) {
    if (!absl::SimpleAtoi(count.substr(0, colon), &min_tasks) || min_tasks <= 0) {
      return BadSpec(spec, "the least number of tasks must be a positive integer");
    }
    count = count.substr(colon + 1);
  }
  int32_t tasks = 0;
  if (!absl::SimpleAtoi(count, &tasks) || tasks <= 0) {
    return BadSpec(spec, "the number of tasks must be a positive integer");
  }
  if (min_tasks > tasks) {
    return BadSpec(spec, absl::StrCat("the least number of tasks (", min_tasks,
                                      ") is above the most (", tasks, ")"));
  }
  proto::CoordinatedJob job;
  job.set_name(std::string(name));
  job.set_num_tasks(tasks);
  job.set_min_tasks(min_tasks);
  return job;
}

absl::StatusOr<std::vector<proto::CoordinatedJob>> ParseJobSpecs(
    absl::Span<const std::string> specs) {
  std::vector<proto::CoordinatedJob> jobs;
  absl::flat_hash_set<std::string> names;
  for (const std::string& entry : specs) {
    for (absl::string_view spec : absl::StrSplit(entry, ',', absl::SkipEmpty())) {
      absl::StatusOr<proto::CoordinatedJob> job = ParseJobSpec(spec);
      if (!job.ok()) return job.status();
      if (!names.insert(job->name()).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "job \"", job->name(), "\" is given twice; give each job once, as NAME=TASKS"));
      }
      jobs.push_back(*std::move(job));
    }
  }
  if (jobs.empty()) {
    return absl::InvalidArgumentError("no job given; name at least one job as NAME=TASKS");
  }
  return jobs;
}

absl::Status AddJobSpecs(absl::Span<const std::string> specs,
                         proto::CoordinationServiceConfig* config) {
  absl::StatusOr<std::vector<proto::CoordinatedJob>> jobs = ParseJobSpecs(specs);
  if (!jobs.ok()) return jobs.status();
  for (proto::CoordinatedJob& job : *jobs) *config->add_coordinated_job_list() = std::move(job);
  return absl::OkStatus();
}

absl::Status CheckElasticJobs(const proto::CoordinationServiceConfig& config) {
  for (const proto::CoordinatedJob& job : config.coordinated_job_list()) {
    if (job.min_tasks() == 0) continue;
    if (job.min_tasks() < 0 || job.min_tasks() > job.num_tasks()) {
      return absl::InvalidArgumentError(
          absl::StrCat("job ", job.name(), " has min_tasks ", job.min_tasks(), " and num_tasks ",
                       job.num_tasks(), "; an elastic job needs 1 <= min_tasks <= num_tasks"));
    }
    if (config.cluster_register_with_barrier()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the register barrier (--register-with-barrier) waits for every configured task, but "
          "job ",
          job.name(), " is elastic (", job.min_tasks(), ":", job.num_tasks(),
          "): its tasks learn who takes part from WaitForMembership; drop the barrier or give "
          "the job a fixed size"));
    }
  }
  return absl::OkStatus();
}

}  // namespace muster
