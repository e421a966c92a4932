// Job specifications as operators type them: "worker=4" is the job "worker" with tasks
// /job:worker/task:0..3. Shared by the leader programs (the muster command, examples/).
#pragma once

#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>
#include <absl/types/span.h>

#include "muster/proto/coordination_config.pb.h"

namespace muster {

// Parses one "name=tasks" entry, or "name=min:max" for an elastic job (min_tasks = min,
// num_tasks = max). The name must be non-empty and free of '/', ':', ',', '=' and spaces; the
// counts must be positive integers, min at most max.
// Possible errors: InvalidArgument naming the entry and the expected form.
absl::StatusOr<proto::CoordinatedJob> ParseJobSpec(absl::string_view spec);

// Parses every entry of `specs`; an entry may itself be a comma-separated list
// ("worker=4,ps=2"). Empty entries are skipped.
// Possible errors: InvalidArgument for a bad entry, a job named twice, or no job at all.
absl::StatusOr<std::vector<proto::CoordinatedJob>> ParseJobSpecs(
    absl::Span<const std::string> specs);

// Parses `specs` and appends the jobs to `config`'s coordinated_job_list.
// Possible errors: those of ParseJobSpecs; `config` is unchanged on error.
absl::Status AddJobSpecs(absl::Span<const std::string> specs,
                         proto::CoordinationServiceConfig* config);

// The elastic jobs of `config` (min_tasks > 0) are sound: min_tasks at most num_tasks, and no
// register barrier (it waits for every configured task, which an elastic job may never have).
// Possible errors: InvalidArgument naming the job and what to change.
absl::Status CheckElasticJobs(const proto::CoordinationServiceConfig& config);

}  // namespace muster
