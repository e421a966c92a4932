// The job as the live page reads it (GET /api/state, and each server-sent event of
// /api/stream): one compact JSON object per snapshot. Per-task values are columns (a state
// letter each, heartbeat ages, steps), so that 10,000 tasks cost about 100 KB rather than a
// JSON object each. The fields are documented in docs/operations.md ("Watching a job").
#pragma once

#include <string>

#include <absl/strings/string_view.h>

#include "muster/proto/observe.pb.h"

namespace muster {

std::string RenderPageState(const proto::JobSnapshot& snapshot, absl::string_view leader_address);

// `text` as a JSON string literal, quotes included, escaped as the event log's lines are
// (AppendJsonString: control characters escaped, bytes that are not UTF-8 as U+FFFD): task
// error messages may carry anything a worker sent.
std::string JsonString(absl::string_view text);

}  // namespace muster
