// The leader's metrics in Prometheus' text exposition format (version 0.0.4): the job's shape
// from a snapshot (tasks by job and state, heartbeat ages, open barriers, key-value sizes), the
// counters and histograms its actors keep (LeaderMetrics), and what the wire guard refused.
// Names follow Prometheus' conventions: the `muster_` prefix, base units (seconds, bytes) in
// the name, `_total` on counters. docs/operations.md ("Watching a job") lists every metric.
#pragma once

#include <string>

#include "muster/actors/observe/leader_metrics.h"
#include "muster/net/transport/wire/guarded_multiplexer.h"
#include "muster/proto/observe.pb.h"

namespace muster {

std::string RenderPrometheus(const proto::JobSnapshot& snapshot, const LeaderMetrics& metrics,
                             const WireStats& wire);

// A label value as the text format writes it: backslash, double quote and line feed escaped.
std::string EscapeLabelValue(const std::string& value);

}  // namespace muster
