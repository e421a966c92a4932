#include "muster/net/observe/page_state.h"

#include <algorithm>
#include <limits>
#include <vector>

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>

#include "muster/actors/observe/events/event_log.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

constexpr int kMaxErrors = 200;
constexpr int kSlowest = 10;
constexpr int kMaxMissing = 64;

char StateLetter(proto::CoordinatedTaskState state) {
  switch (state) {
    case proto::TASKSTATE_CONNECTED:
      return 'C';
    case proto::TASKSTATE_DISCONNECTED:
      return 'D';
    case proto::TASKSTATE_ERROR:
      return 'E';
    default:
      return 'U';
  }
}

std::string CodeName(int code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

// The tasks of a snapshot by index: their names and the columns the page reads.
class Tasks {
 public:
  explicit Tasks(const proto::TaskColumns& c) : c_(c) {
    int first = 0;
    for (int size : c.job_sizes()) {
      firsts_.push_back(first);
      first += size;
    }
    count_ = std::min<int>({first, static_cast<int>(c.states().size()), c.heartbeat_age_ms_size(),
                            c.connected_age_ms_size(), c.steps_size()});
  }
  int count() const { return count_; }
  proto::CoordinatedTaskState state(int i) const {
    return static_cast<proto::CoordinatedTaskState>(c_.states()[i]);
  }
  // The heartbeat age of a connected task (one that has not beaten yet: since it registered).
  int64_t heartbeat_ms(int i) const {
    if (state(i) != proto::TASKSTATE_CONNECTED) return -1;
    return c_.heartbeat_age_ms(i) >= 0 ? c_.heartbeat_age_ms(i) : c_.connected_age_ms(i);
  }
  bool has_step(int i) const { return c_.steps(i) != std::numeric_limits<int64_t>::min(); }
  int64_t step(int i) const { return c_.steps(i); }
  std::string step_json(int i) const { return has_step(i) ? absl::StrCat(step(i)) : "null"; }
  std::string name(int i) const {
    int job =
        static_cast<int>(std::upper_bound(firsts_.begin(), firsts_.end(), i) - firsts_.begin()) - 1;
    return TaskName(MakeTask(c_.job_names(job), i - firsts_[job]));
  }
  const std::vector<int>& firsts() const { return firsts_; }

 private:
  const proto::TaskColumns& c_;
  std::vector<int> firsts_;
  int count_ = 0;
};

std::string EventJson(const proto::JobEvent& event) {
  std::string text = event.detail();
  if (event.error_code() != 0) {
    absl::StrAppend(&text, text.empty() ? "" : ": ", CodeName(event.error_code()), ": ",
                    event.error_message());
  }
  if (!event.barrier_id().empty()) {
    text = absl::StrCat(event.barrier_id(), "::", event.barrier_counter(), text.empty() ? "" : " ",
                        text);
  }
  return absl::StrCat("{\"seq\":", event.seq(), ",\"unix_ms\":", event.unix_ms(),
                      ",\"kind\":", JsonString(proto::JobEventKind_Name(event.kind())),
                      ",\"task\":", JsonString(event.has_task() ? TaskName(event.task()) : ""),
                      ",\"text\":", JsonString(text), "}");
}

void Leader(std::string& out, const proto::JobSnapshot& s, absl::string_view address) {
  absl::StrAppend(&out, "\"leader\":{\"address\":", JsonString(address), ",\"incarnation\":\"",
                  absl::StrFormat("0x%016x", s.leader_incarnation()),
                  "\",\"uptime_ms\":", s.uptime_ms(), ",\"version\":", s.version(),
                  ",\"taken_unix_ms\":", s.taken_unix_ms(),
                  ",\"last_event_seq\":", s.last_event_seq(), "}");
}

void TaskFields(std::string& out, const proto::JobSnapshot& s) {
  const proto::TaskColumns& c = s.tasks();
  Tasks tasks(c);
  std::string jobs, states, beats, steps, errors;
  for (int j = 0; j < c.job_names_size() && j < c.job_sizes_size(); ++j) {
    absl::StrAppend(&jobs, j == 0 ? "" : ",", "{\"name\":", JsonString(c.job_names(j)),
                    ",\"first\":", tasks.firsts()[j], ",\"count\":", c.job_sizes(j), "}");
  }
  int64_t connected = 0, disconnected = 0, failed = 0;
  std::vector<int> slowest;
  states.reserve(tasks.count());
  for (int i = 0; i < tasks.count(); ++i) {
    states += StateLetter(tasks.state(i));
    absl::StrAppend(&beats, i == 0 ? "" : ",", tasks.heartbeat_ms(i));
    absl::StrAppend(&steps, i == 0 ? "" : ",", tasks.step_json(i));
    switch (tasks.state(i)) {
      case proto::TASKSTATE_CONNECTED:
        ++connected;
        slowest.push_back(i);
        break;
      case proto::TASKSTATE_DISCONNECTED:
        ++disconnected;
        break;
      case proto::TASKSTATE_ERROR:
        ++failed;
        break;
      default:
        break;
    }
  }
  for (int k = 0; k < c.errors_size() && k < kMaxErrors; ++k) {
    const proto::TaskColumnError& e = c.errors(k);
    if (e.index() < 0 || e.index() >= tasks.count()) continue;
    absl::StrAppend(&errors, errors.empty() ? "" : ",", "{\"index\":", e.index(),
                    ",\"task\":", JsonString(tasks.name(e.index())),
                    ",\"code\":", JsonString(CodeName(e.code())),
                    ",\"message\":", JsonString(e.message()), "}");
  }
  // The stragglers: the lowest steps first (tasks that report none last), then the oldest beat.
  auto rank = [&](int a, int b) {
    if (tasks.has_step(a) != tasks.has_step(b)) return tasks.has_step(a);
    if (tasks.has_step(a) && tasks.step(a) != tasks.step(b)) return tasks.step(a) < tasks.step(b);
    return tasks.heartbeat_ms(a) > tasks.heartbeat_ms(b);
  };
  size_t keep = std::min<size_t>(kSlowest, slowest.size());
  std::partial_sort(slowest.begin(), slowest.begin() + keep, slowest.end(), rank);
  std::string slow;
  for (size_t k = 0; k < keep; ++k) {
    int i = slowest[k];
    absl::StrAppend(&slow, k == 0 ? "" : ",", "{\"index\":", i,
                    ",\"task\":", JsonString(tasks.name(i)), ",\"hb_ms\":", tasks.heartbeat_ms(i),
                    ",\"step\":", tasks.step_json(i), "}");
  }
  absl::StrAppend(&out, ",\"jobs\":[", jobs, "],\"tasks\":{\"count\":", tasks.count(),
                  ",\"state\":\"", states, "\",\"hb_ms\":[", beats, "],\"step\":[", steps,
                  "]},\"counts\":{\"connected\":", connected, ",\"disconnected\":", disconnected,
                  ",\"error\":", failed, "},\"errors\":[", errors, "],\"slowest\":[", slow, "]");
}

void Barriers(std::string& out, const proto::JobSnapshot& s) {
  absl::StrAppend(&out, ",\"barriers\":[");
  for (int i = 0; i < s.barriers_size(); ++i) {
    const auto& b = s.barriers(i);
    std::string missing;
    for (int k = 0; k < b.waiting_for_size() && k < kMaxMissing; ++k) {
      absl::StrAppend(&missing, k == 0 ? "" : ",", JsonString(TaskName(b.waiting_for(k))));
    }
    absl::StrAppend(&out, i == 0 ? "" : ",", "{\"id\":", JsonString(b.barrier_id()),
                    ",\"counter\":", b.counter(), ",\"arrived\":", b.arrived(),
                    ",\"total\":", b.total(), ",\"waited_ms\":", b.waited_ms(),
                    ",\"deadline_in_ms\":", b.deadline_in_ms(), ",\"missing\":[", missing,
                    "],\"missing_count\":", b.total() - b.arrived(), "}");
  }
  out += "]";
}

void KeyValue(std::string& out, const proto::JobSnapshot& s) {
  absl::StrAppend(&out, ",\"kv\":[");
  for (int i = 0; i < s.kv_directories_size(); ++i) {
    const auto& d = s.kv_directories(i);
    absl::StrAppend(&out, i == 0 ? "" : ",", "{\"directory\":", JsonString(d.directory()),
                    ",\"keys\":", d.keys(), ",\"bytes\":", d.value_bytes(),
                    ",\"parked_gets\":", d.parked_gets(), ",\"watches\":", d.watches(), "}");
  }
  out += "]";
}

void Events(std::string& out, const proto::JobSnapshot& s) {
  absl::StrAppend(&out, ",\"events\":[");
  for (int i = 0; i < s.recent_events_size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ",", EventJson(s.recent_events(i)));
  }
  out += "],\"first_error\":";
  if (!s.has_first_error()) {
    out += "null";
    return;
  }
  const proto::JobEvent& e = s.first_error();
  absl::StrAppend(&out, "{\"seq\":", e.seq(), ",\"unix_ms\":", e.unix_ms(),
                  ",\"task\":", JsonString(e.has_task() ? TaskName(e.task()) : ""),
                  ",\"code\":", JsonString(CodeName(e.error_code())),
                  ",\"message\":", JsonString(e.error_message()), "}");
}

}  // namespace

std::string JsonString(absl::string_view text) {
  std::string out;
  AppendJsonString(text, &out);
  return out;
}

std::string RenderPageState(const proto::JobSnapshot& snapshot, absl::string_view leader_address) {
  std::string out = "{";
  out.reserve(1024 + snapshot.tasks().states().size() * 12);
  Leader(out, snapshot, leader_address);
  TaskFields(out, snapshot);
  Barriers(out, snapshot);
  KeyValue(out, snapshot);
  Events(out, snapshot);
  out += "}";
  return out;
}

}  // namespace muster
