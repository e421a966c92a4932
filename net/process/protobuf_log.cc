#include "muster/net/process/protobuf_log.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include <absl/strings/str_cat.h>
#include <google/protobuf/stubs/logging.h>

#include "muster/messages/line_rate_limiter.h"

namespace muster {
namespace {

constexpr size_t kMaxLineBytes = 1000;

std::atomic<google::protobuf::LogHandler*> previous_handler{nullptr};
LineRateLimiter lines;  // counts the lines left out

// One line: no control bytes, cut at kMaxLineBytes.
std::string Printable(const std::string& message) {
  std::string out = message.substr(0, kMaxLineBytes);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f') c = '?';
  }
  return out;
}

void RateLimitedHandler(google::protobuf::LogLevel level, const char* filename, int line,
                        const std::string& message) {
  google::protobuf::LogHandler* previous = previous_handler.load(std::memory_order_acquire);
  if (previous == nullptr) return;  // protobuf's logs were silenced before
  if (level >= google::protobuf::LOGLEVEL_FATAL) {
    previous(level, filename, line, message);
    return;
  }
  // Protobuf's hook runs on any thread, outside actors: steady_clock is its clock.
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (!lines.TakeTurn(now)) {
    lines.Count();
    return;
  }
  std::string text = Printable(message);
  const uint64_t skipped = lines.TakeCount();
  if (skipped > 0) {
    absl::StrAppend(&text, " (and ", skipped, " more protobuf log line", skipped == 1 ? "" : "s",
                    " since the last one, left out: at most one a second)");
  }
  previous(level, filename, line, text);
}

}  // namespace

void RateLimitProtobufLogs() {
  static std::once_flag once;
  std::call_once(once, [] {
    previous_handler.store(google::protobuf::SetLogHandler(&RateLimitedHandler),
                           std::memory_order_release);
  });
}

}  // namespace muster
