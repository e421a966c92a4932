// The stamp `muster serve` puts before each line it prints (2026-11-27T21:01:11.531+00:00 ...),
// read back in wall-clock microseconds, for tests that time what a leader said.
#pragma once

#include <cstdint>
#include <string>

#include <absl/time/time.h>

namespace muster::testing {

// -1 when `line` does not start with a stamp.
inline int64_t LineStampMicros(const std::string& line) {
  absl::Time time;
  std::string error;
  if (!absl::ParseTime("%Y-%m-%dT%H:%M:%E3S%Ez", line.substr(0, line.find(' ')), &time, &error)) {
    return -1;
  }
  return absl::ToUnixMicros(time);
}

}  // namespace muster::testing
