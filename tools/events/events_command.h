// `muster events`: the job's events as the leader keeps them (its last 4096: tasks registered
// and failed, restarts, rounds, barriers, stuck tasks, preemption), one line per event, in
// words or as the JSON lines of `muster serve --events`; with --follow it keeps long-polling
// for new ones until Ctrl-C or until the leader goes away.
#pragma once

#include <string>
#include <vector>

#include <absl/time/time.h>

#include "muster/proto/observe.pb.h"
#include "muster/tools/common/command_line.h"

namespace muster::cli {

// The command line of `muster events`.
const CommandSpec& EventsSpec();

// Runs `muster events` with the arguments that follow "events"; returns the exit code.
int RunEvents(const std::vector<std::string>& argv);

// One event in words: its time in `zone` (RFC 3339, milliseconds), kind, the task or barrier
// it concerns, then what else it says (state, incarnation, round, error, who a barrier waited
// for, detail), control characters C-escaped so that an event is always one line.
std::string FormatEvent(const proto::JobEvent& event, absl::TimeZone zone = absl::LocalTimeZone());

}  // namespace muster::cli
