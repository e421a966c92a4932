// How a task process ended, in words: what the coordinator's error messages and the launcher's
// log lines say.
#pragma once

#include <string>

namespace muster {

// "exited with status 3", or "was killed by signal 9 (SIGKILL)" when `signal` > 0.
std::string ProcessExitText(int exit_code, int signal);

}  // namespace muster
