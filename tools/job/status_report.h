// The leader's state as `muster status` shows it: collected with blocking requests from the
// command's main thread (task states and heartbeat ages, open barriers, key-value directory
// sizes) and rendered as tables or as one line of JSON (cli::StatusReport).
#pragma once

#include <string>

#include <absl/status/statusor.h>
#include <absl/time/time.h>

#include "muster/proto/coordination_service.pb.h"
#include "muster/proto/observe.pb.h"
#include "muster/tools/common/cli_common.h"
#include "muster/tools/job/status_report.pb.h"

namespace muster::cli {

// Collects the report for the tasks of `job_state` (a WatchJobState reply), each request
// bounded by `timeout`.
// Possible errors: those of GetTaskState, GetBarriers, GetKvStats and GetMembership (asked for
// every job; a job of fixed size is left out); DeadlineExceeded when the leader does not answer.
absl::StatusOr<StatusReport> CollectStatus(LeaderSession& session, absl::Duration timeout,
                                           const proto::WatchJobStateResponse& job_state);

// Fills kv_directories (keys per top-level directory, by name; empty ones left out) and kv_keys
// from the directories' sizes (GetKvStats: no key or value is read).
void CountKvDirectories(const proto::GetKvStatsResponse& sizes, StatusReport* report);

// The tables: tasks, elastic jobs' memberships (when there are any), open barriers, key-value
// directories.
std::string RenderStatusTable(const StatusReport& report);

// The registration timeline (`muster status --bring-up`), from the connected tasks' ages
// (connected_age_ms: since their current incarnation registered): how many are connected, when
// the first registered and the median registration, then the last 10 to register, latest
// first, each with how late it was against the median ("+1.8s after the median"); the tasks
// not connected are named.
std::string RenderBringUp(const StatusReport& report);

// One line of JSON (proto3 JSON mapping, proto field names, default values included).
std::string RenderStatusJson(const StatusReport& report);

}  // namespace muster::cli
