#include "muster/net/process/protobuf_log.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>

#include <absl/strings/str_cat.h>
#include <google/protobuf/stubs/logging.h>

namespace muster {
namespace {

constexpr int64_t kNanosBetweenLines = 1'000'000'000;
constexpr int64_t kNeverLogged = std::numeric_limits<int64_t>::min();
constexpr size_t kMaxLineBytes = 1000;

std::atomic<google::protobuf::LogHandler*> previous_handler{nullptr};
std::atomic<int64_t> last_line_nanos{kNeverLogged};
std::atomic<uint64_t> left_out{0};

// True when this line may pass now: at most one a second, one caller wins.
bool TakeLineTurn() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_line_nanos.load(std::memory_order_relaxed);
  if (last != kNeverLogged && now - last < kNanosBetweenLines) return false;
  return last_line_nanos.compare_exchange_strong(last, now, std::memory_order_relaxed);
}

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
  if (!TakeLineTurn()) {
    left_out.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::string text = Printable(message);
  const uint64_t skipped = left_out.exchange(0, std::memory_order_relaxed);
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
