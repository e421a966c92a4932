// Text that came off the wire, cut to a bound before it is kept or told again (an error message
// may be megabytes; the leader keeps it, writes it with the task's record and pushes it to every
// task).
#pragma once

#include <cstddef>
#include <string>

#include <absl/strings/string_view.h>

namespace muster {

// `text` if it has at most `max_bytes`; otherwise its first `max_bytes` at most, cut between
// UTF-8 characters, followed by " [cut: N more bytes]".
std::string CutText(absl::string_view text, size_t max_bytes);

}  // namespace muster
