#include "muster/actors/observe/events/event_log.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>

#include "muster/messages/task_name.h"

namespace muster {
namespace {

// The length of the well-formed UTF-8 sequence at the start of `text` (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF); 0 when it is not one.
size_t Utf8Length(absl::string_view text) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  auto tail = [&](size_t i, unsigned char low = 0x80, unsigned char high = 0xBF) {
    return i < text.size() && byte(i) >= low && byte(i) <= high;
  };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return tail(1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    const unsigned char low = lead == 0xE0 ? 0xA0 : 0x80;
    const unsigned char high = lead == 0xED ? 0x9F : 0xBF;
    return tail(1, low, high) && tail(2) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    const unsigned char low = lead == 0xF0 ? 0x90 : 0x80;
    const unsigned char high = lead == 0xF4 ? 0x8F : 0xBF;
    return tail(1, low, high) && tail(2) && tail(3) ? 4 : 0;
  }
  return 0;
}

// Writes the members of one JSON object, each after a comma but the first.
class JsonObject {
 public:
  explicit JsonObject(std::string* out) : out_(out) { out_->push_back('{'); }

  void Int(absl::string_view key, int64_t value) { absl::StrAppend(Key(key), value); }
  void String(absl::string_view key, absl::string_view value) { AppendJsonString(value, Key(key)); }
  std::string* Key(absl::string_view key) {
    if (!first_) out_->push_back(',');
    first_ = false;
    AppendJsonString(key, out_);
    out_->push_back(':');
    return out_;
  }
  void Close() { out_->push_back('}'); }

 private:
  std::string* out_;
  bool first_ = true;
};

std::string KindName(proto::JobEventKind kind) {
  const std::string& name = proto::JobEventKind_Name(kind);
  return name.empty() ? absl::StrCat(static_cast<int>(kind)) : name;
}

std::string StateName(proto::CoordinatedTaskState state) {
  const std::string& name = proto::CoordinatedTaskState_Name(state);
  return name.empty() ? absl::StrCat(static_cast<int>(state)) : name;
}

std::string CodeName(int32_t code) {
  std::string name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? absl::StrCat(code) : name;
}

}  // namespace

EventLog::EventLog(absl::Time wall_base, int64_t monotonic_base_ns, size_t capacity)
    : wall_base_(wall_base),
      monotonic_base_ns_(monotonic_base_ns),
      capacity_(std::max<size_t>(capacity, 1)) {}

const proto::JobEvent& EventLog::Append(proto::JobEvent event, int64_t monotonic_ns) {
  event.set_seq(++last_seq_);
  event.set_monotonic_ns(monotonic_ns);
  event.set_unix_ms(
      absl::ToUnixMillis(wall_base_ + absl::Nanoseconds(monotonic_ns - monotonic_base_ns_)));
  if (event.kind() == proto::TASK_FAILED && first_failure_.kind() == proto::JOB_EVENT_UNSPECIFIED) {
    first_failure_ = event;
  }
  if (ring_.size() == capacity_) ring_.pop_front();
  ring_.push_back(std::move(event));
  return ring_.back();
}

proto::WatchEventsResponse EventLog::After(int64_t after_seq, int32_t max_events,
                                           bool newest) const {
  proto::WatchEventsResponse response;
  response.set_first_kept_seq(first_kept_seq());
  response.set_last_seq(last_seq_);
  if (first_failure_.kind() != proto::JOB_EVENT_UNSPECIFIED) {
    *response.mutable_first_failure() = first_failure_;
  }
  int64_t from = std::max(after_seq + 1, first_kept_seq());
  if (newest) from = std::max<int64_t>(from, last_seq_ - std::max(max_events, 1) + 1);
  if (from > last_seq_) return response;
  const int64_t count = std::min<int64_t>(last_seq_ - from + 1, std::max(max_events, 1));
  response.mutable_events()->Reserve(static_cast<int>(count));
  auto it = ring_.begin() + (from - first_kept_seq());
  for (int64_t i = 0; i < count; ++i, ++it) *response.add_events() = *it;
  return response;
}

void AppendJsonString(absl::string_view text, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          absl::StrAppendFormat(out, "\\u%04x", c);
        } else if (c < 0x80) {
          out->push_back(static_cast<char>(c));
        } else if (size_t n = Utf8Length(text.substr(i)); n > 0) {
          out->append(text.data() + i, n);
          i += n;
          continue;
        } else {
          out->append("\\ufffd");
        }
    }
    ++i;
  }
  out->push_back('"');
}

std::string EventTimeUtc(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

std::string EventJson(const proto::JobEvent& event) {
  std::string out;
  out.reserve(256);
  JsonObject json(&out);
  json.Int("seq", event.seq());
  json.Int("monotonic_ns", event.monotonic_ns());
  json.Int("unix_ms", event.unix_ms());
  json.String("time", EventTimeUtc(event.unix_ms()));
  json.String("kind", KindName(event.kind()));
  if (event.has_task()) json.String("task", TaskName(event.task()));
  if (event.incarnation() != 0) {
    json.String("incarnation",
                absl::StrFormat("0x%016x", static_cast<uint64_t>(event.incarnation())));
  }
  if (event.state() != proto::TASKSTATE_UNSPECIFIED) json.String("state", StateName(event.state()));
  if (event.error_code() != 0) json.String("error_code", CodeName(event.error_code()));
  if (!event.error_message().empty()) json.String("error_message", event.error_message());
  if (!event.barrier_id().empty()) {
    json.String("barrier", event.barrier_id());
    json.Int("counter", event.barrier_counter());
  }
  if (event.waiting_for_size() > 0) {
    std::string* out_list = json.Key("waiting_for");
    out_list->push_back('[');
    for (int i = 0; i < event.waiting_for_size(); ++i) {
      if (i > 0) out_list->push_back(',');
      AppendJsonString(TaskName(event.waiting_for(i)), out_list);
    }
    out_list->push_back(']');
  }
  if (event.waiting_count() != 0) json.Int("waiting_count", event.waiting_count());
  if (event.round() != 0) json.Int("round", event.round());
  if (!event.detail().empty()) json.String("detail", event.detail());
  json.Close();
  return out;
}

}  // namespace muster
