// What the worker programs of the multi-process tests print: one line per event
// ("EVENT <what> ..."), statuses as "code=CODE message=...", wall-clock microseconds where a
// test measures latencies.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>

namespace muster::testing {

inline int64_t NowMicros() { return absl::ToUnixMicros(absl::Now()); }

inline void Event(const std::string& text) {
  std::printf("EVENT %s\n", text.c_str());
  std::fflush(stdout);
}

inline std::string Describe(const absl::Status& status) {
  return absl::StrCat("code=", absl::StatusCodeToString(status.code()),
                      " message=", status.message());
}

}  // namespace muster::testing
