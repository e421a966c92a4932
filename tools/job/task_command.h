// `muster task reset`: operations on one task of a running leader. reset moves a task in ERROR
// back to DISCONNECTED (ResetTask), so that a new process may register it again.
#pragma once

#include <string>
#include <vector>

#include "muster/tools/common/command_line.h"

namespace muster::cli {

// The command line of `muster task <verb>`; null for an unknown verb.
const CommandSpec* TaskSpec(const std::string& verb);

// Runs `muster task` with the arguments that follow "task" (the verb first); returns the exit
// code.
int RunTask(const std::vector<std::string>& argv);

}  // namespace muster::cli
