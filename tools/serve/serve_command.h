// `muster serve`: a standalone leader. Spawns the coordinator for the jobs given, publishes it,
// prints one ready line, logs task events (one stamped line each) until SIGINT or SIGTERM, then
// stops the coordinator, whose barrier actors answer their waiters with Aborted.
#pragma once

#include <string>
#include <vector>

#include <absl/status/statusor.h>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/net/transport/node_config.h"
#include "muster/tools/common/command_line.h"

namespace muster::cli {

// The command line of `muster serve`.
const CommandSpec& ServeSpec();

// The coordinator options the serve flags describe (call after ParseCommandLine).
// Possible errors: InvalidArgument (bad or missing --job, unknown or conflicting --policy and
// --recoverable-job, negative durations, --register-timeout without --register-with-barrier).
absl::StatusOr<CoordinatorOptions> ServeOptionsFromFlags();

// The node options the serve flags describe: frame limit, handshake deadline, TLS files.
// Possible errors: InvalidArgument (out of range), NotFound (a TLS file).
absl::StatusOr<NodeOptions> NodeOptionsFromFlags();

// Prints one line of the leader's log to standard output, stamped with the local time.
void PrintLine(const std::string& line);

// Runs `muster serve` with the arguments that follow "serve"; returns the exit code.
int RunServe(const std::vector<std::string>& argv);

}  // namespace muster::cli
