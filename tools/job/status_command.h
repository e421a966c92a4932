// `muster status`: what a running leader knows: every task (state, incarnation, last heartbeat,
// error), the open barriers and the tasks they wait for, and the key-value directories. Tables
// for people, --json for programs, --watch to print again whenever a task changes state.
#pragma once

#include <string>
#include <vector>

#include "muster/tools/common/command_line.h"

namespace muster::cli {

// The command line of `muster status`.
const CommandSpec& StatusSpec();

// Runs `muster status` with the arguments that follow "status"; returns the exit code.
int RunStatus(const std::vector<std::string>& argv);

}  // namespace muster::cli
