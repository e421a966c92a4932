// The one way to name tasks: /job:<name>/task:<id>, parsing, ordering, and compact summaries of
// task sets for error messages (every task is named; ranges keep long lists short).
#pragma once

#include <string>
#include <vector>

#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>
#include <absl/types/span.h>

#include "muster/proto/coordination_service.pb.h"

namespace muster {

// Returns the task /job:<job>/task:<id>.
proto::CoordinatedTask MakeTask(absl::string_view job, int task_id);

// Formats `task` as "/job:<name>/task:<id>".
std::string TaskName(const proto::CoordinatedTask& task);

// A text from the wire as an error message may quote it: printable texts of up to 128 bytes as
// they are, others C-escaped and cut ("...(N bytes)").
std::string WireTextForMessage(absl::string_view text);
// A job name as an error message may quote it (WireTextForMessage).
std::string JobNameForMessage(absl::string_view job);
// TaskName with the job name as JobNameForMessage gives it.
std::string TaskNameForMessage(const proto::CoordinatedTask& task);

// Parses "/job:<name>/task:<id>" (a "/replica:<r>" segment before the task is accepted).
// Possible errors: InvalidArgument naming the text and the expected form.
absl::StatusOr<proto::CoordinatedTask> ParseTaskName(absl::string_view name);

// Orders tasks by job name, then task id.
bool TaskLess(const proto::CoordinatedTask& a, const proto::CoordinatedTask& b);
bool SameTask(const proto::CoordinatedTask& a, const proto::CoordinatedTask& b);

// Summarises tasks per job with id ranges, every task included, jobs in name order:
// {worker/3, worker/7..12, ps/0} -> "ps/0, worker/[3,7-12]". Empty input -> "none".
std::string SummarizeTasks(absl::Span<const proto::CoordinatedTask> tasks);

}  // namespace muster
