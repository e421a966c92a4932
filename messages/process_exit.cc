#include "muster/messages/process_exit.h"

#include <string.h>

#include <absl/strings/str_cat.h>

namespace muster {

std::string ProcessExitText(int exit_code, int signal) {
  if (signal > 0) {
    const char* name = sigabbrev_np(signal);
    return absl::StrCat("was killed by signal ", signal,
                        name ? absl::StrCat(" (SIG", name, ")") : "");
  }
  return absl::StrCat("exited with status ", exit_code);
}

}  // namespace muster
