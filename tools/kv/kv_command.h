// `muster kv get|put|ls|rm|watch`: the key-value store of a running leader, from the shell.
// Each verb is one request to the coordinator (watch: a subscription printed until Ctrl-C or
// --count events).
#pragma once

#include <string>
#include <vector>

#include "muster/tools/common/command_line.h"

namespace muster::cli {

// The command line of `muster kv <verb>`; null for an unknown verb.
const CommandSpec* KvSpec(const std::string& verb);

// Runs `muster kv` with the arguments that follow "kv" (the verb first); returns the exit code.
int RunKv(const std::vector<std::string>& argv);

}  // namespace muster::cli
