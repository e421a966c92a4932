#include "muster/net/observe/prometheus_text.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <vector>

#include <absl/status/status.h>
#include <absl/strings/ascii.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>

namespace muster {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Writes families one after the other: each starts with its HELP and TYPE lines.
class Exposition {
 public:
  void Family(absl::string_view name, absl::string_view type, absl::string_view help) {
    absl::StrAppend(&text_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
  }
  void Sample(absl::string_view name, const Labels& labels, double value) {
    absl::StrAppend(&text_, name);
    if (!labels.empty()) {
      text_ += '{';
      for (size_t i = 0; i < labels.size(); ++i) {
        absl::StrAppend(&text_, i == 0 ? "" : ",", labels[i].first, "=\"",
                        EscapeLabelValue(labels[i].second), "\"");
      }
      text_ += '}';
    }
    absl::StrAppend(&text_, " ", Number(value), "\n");
  }
  // A histogram's buckets, sum and count (the family line is the caller's).
  void Histogram(absl::string_view name, Labels labels, const MetricHistogram::Reading& reading) {
    for (size_t i = 0; i < reading.bounds.size(); ++i) {
      Labels bucket = labels;
      bucket.emplace_back("le", Number(reading.bounds[i]));
      Sample(absl::StrCat(name, "_bucket"), bucket, static_cast<double>(reading.cumulative[i]));
    }
    Labels inf = labels;
    inf.emplace_back("le", "+Inf");
    Sample(absl::StrCat(name, "_bucket"), inf, static_cast<double>(reading.count));
    Sample(absl::StrCat(name, "_sum"), labels, reading.sum);
    Sample(absl::StrCat(name, "_count"), labels, static_cast<double>(reading.count));
  }
  std::string Take() { return std::move(text_); }

  static std::string Number(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    if (value == std::floor(value) && std::fabs(value) < 1e15) {
      return absl::StrCat(static_cast<int64_t>(value));
    }
    return absl::StrFormat("%.9g", value);
  }

 private:
  std::string text_;
};

std::string StateLabel(proto::CoordinatedTaskState state) {
  switch (state) {
    case proto::TASKSTATE_CONNECTED:
      return "connected";
    case proto::TASKSTATE_DISCONNECTED:
      return "disconnected";
    case proto::TASKSTATE_ERROR:
      return "error";
    default:
      return "uninitialized";
  }
}

std::string CodeLabel(int code) {
  return absl::AsciiStrToLower(absl::StatusCodeToString(static_cast<absl::StatusCode>(code)));
}

void Leader(Exposition& out, const proto::JobSnapshot& snapshot) {
  out.Family("muster_leader_info", "gauge", "The leader's incarnation (always 1).");
  out.Sample("muster_leader_info",
             {{"incarnation", absl::StrFormat("%016x", snapshot.leader_incarnation())}}, 1);
  out.Family("muster_leader_uptime_seconds", "gauge", "Seconds since the leader started.");
  out.Sample("muster_leader_uptime_seconds", {}, snapshot.uptime_ms() / 1000.0);
}

void Tasks(Exposition& out, const proto::JobSnapshot& snapshot) {
  // Jobs in the cluster's order; every state of every job, zeros included.
  const proto::TaskColumns& c = snapshot.tasks();
  std::vector<std::string> jobs;
  std::vector<std::array<int64_t, 5>> by_state;  // per job, by CoordinatedTaskState
  std::vector<std::vector<double>> ages;         // per job, connected tasks' heartbeat ages
  const int n = std::min<int>(
      {static_cast<int>(c.states().size()), c.heartbeat_age_ms_size(), c.connected_age_ms_size()});
  int i = 0;
  for (int j = 0; j < c.job_names_size() && j < c.job_sizes_size(); ++j) {
    jobs.push_back(c.job_names(j));
    by_state.push_back({});
    ages.emplace_back();
    for (int k = 0; k < c.job_sizes(j) && i < n; ++k, ++i) {
      int state = static_cast<unsigned char>(c.states()[i]);
      ++by_state[j][state < 5 ? state : 0];
      if (state != proto::TASKSTATE_CONNECTED) continue;
      // A task that registered a moment ago and has not beaten yet: its age is its connection's.
      int64_t ms = c.heartbeat_age_ms(i) >= 0 ? c.heartbeat_age_ms(i)
                                              : std::max<int64_t>(0, c.connected_age_ms(i));
      ages[j].push_back(ms / 1000.0);
    }
  }
  out.Family("muster_tasks", "gauge", "Configured tasks by job and state.");
  for (size_t j = 0; j < jobs.size(); ++j) {
    const auto& count = by_state[j];
    for (auto state :
         {proto::TASKSTATE_CONNECTED, proto::TASKSTATE_DISCONNECTED, proto::TASKSTATE_ERROR}) {
      out.Sample("muster_tasks", {{"job", jobs[j]}, {"state", StateLabel(state)}},
                 static_cast<double>(count[state]));
    }
    out.Sample("muster_tasks", {{"job", jobs[j]}, {"state", "uninitialized"}},
               static_cast<double>(count[proto::TASKSTATE_UNSPECIFIED] +
                                   count[proto::TASKSTATE_UNINITIALIZED]));
  }
  out.Family("muster_task_heartbeat_age_seconds", "histogram",
             "Seconds since each connected task's last heartbeat, as of now (a gauge histogram: "
             "its buckets count the connected tasks, use histogram_quantile, not rate).");
  std::vector<double> bounds = {0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60};
  for (size_t j = 0; j < jobs.size(); ++j) {
    MetricHistogram::Reading reading;
    reading.bounds = bounds;
    reading.cumulative.assign(bounds.size(), 0);
    for (double age : ages[j]) {
      for (size_t i = 0; i < bounds.size(); ++i) {
        if (age <= bounds[i]) ++reading.cumulative[i];
      }
      reading.sum += age;
      ++reading.count;
    }
    out.Histogram("muster_task_heartbeat_age_seconds", {{"job", jobs[j]}}, reading);
  }
}

void Events(Exposition& out, const LeaderMetrics& metrics) {
  out.Family("muster_task_failures_total", "counter",
             "Tasks that went to ERROR, by the status code of the cause.");
  for (int code = 1; code <= 16; ++code) {
    uint64_t n = metrics.task_failures(static_cast<absl::StatusCode>(code));
    if (n > 0) out.Sample("muster_task_failures_total", {{"cause", CodeLabel(code)}}, n);
  }
  struct Counted {
    const char* name;
    proto::JobEventKind kind;
    const char* help;
  };
  for (const Counted& c : {
           Counted{"muster_task_registrations_total", proto::TASK_REGISTERED,
                   "Task registrations (a new or the same incarnation)."},
           Counted{"muster_task_restarts_total", proto::TASK_RESTARTED,
                   "Tasks restarted by the supervision policy."},
           Counted{"muster_rounds_total", proto::ROUND_STARTED,
                   "Rounds: every task restarted together."},
           Counted{"muster_tasks_stuck_total", proto::TASK_STUCK,
                   "Tasks failed by the stuck rule (no step progress)."},
           Counted{"muster_preemptions_total", proto::PREEMPTION_NOTICED, "Preemption notices."},
           Counted{"muster_barriers_passed_total", proto::BARRIER_PASSED,
                   "Barrier instances every participant reached."},
           Counted{"muster_barriers_failed_total", proto::BARRIER_FAILED,
                   "Barrier instances that timed out, were cancelled or failed."},
       }) {
    out.Family(c.name, "counter", c.help);
    out.Sample(c.name, {}, static_cast<double>(metrics.events(c.kind)));
  }
}

void Barriers(Exposition& out, const proto::JobSnapshot& snapshot, const LeaderMetrics& metrics) {
  int64_t missing = 0;
  double oldest = 0;
  for (const auto& barrier : snapshot.barriers()) {
    missing += barrier.total() - barrier.arrived();
    oldest = std::max(oldest, barrier.waited_ms() / 1000.0);
  }
  out.Family("muster_barriers_open", "gauge", "Barrier instances waiting for participants.");
  out.Sample("muster_barriers_open", {}, snapshot.barriers_size());
  out.Family("muster_barrier_missing_tasks", "gauge",
             "Participants the open barrier instances still wait for, summed.");
  out.Sample("muster_barrier_missing_tasks", {}, static_cast<double>(missing));
  out.Family("muster_barrier_oldest_wait_seconds", "gauge",
             "How long the oldest open barrier instance has waited.");
  out.Sample("muster_barrier_oldest_wait_seconds", {}, oldest);
  out.Family("muster_barrier_wait_seconds", "histogram",
             "From the first arrival to the end of each barrier instance that ended.");
  out.Histogram("muster_barrier_wait_seconds", {}, metrics.barrier_wait().Read());
}

void KeyValue(Exposition& out, const proto::JobSnapshot& snapshot, const LeaderMetrics& metrics) {
  int64_t keys = 0, bytes = 0, parked = 0, watches = 0, kept = 0;
  for (const auto& dir : snapshot.kv_directories()) {
    keys += dir.keys();
    bytes += dir.value_bytes();
    parked += dir.parked_gets();
    watches += dir.watches();
    kept += dir.kept_replies();
  }
  out.Family("muster_kv_directories", "gauge", "Top-level key-value directories.");
  out.Sample("muster_kv_directories", {}, snapshot.kv_directories_size());
  out.Family("muster_kv_keys", "gauge", "Keys stored.");
  out.Sample("muster_kv_keys", {}, static_cast<double>(keys));
  out.Family("muster_kv_bytes", "gauge", "Bytes of the keys and values stored.");
  out.Sample("muster_kv_bytes", {}, static_cast<double>(bytes));
  out.Family("muster_kv_parked_calls", "gauge",
             "GetKeyValue and WaitForKeys calls waiting for their keys.");
  out.Sample("muster_kv_parked_calls", {}, static_cast<double>(parked));
  out.Family("muster_kv_watches", "gauge", "Key watches.");
  out.Sample("muster_kv_watches", {}, static_cast<double>(watches));
  out.Family("muster_kv_kept_replies", "gauge",
             "Replies kept for writes their agents may send again (exactly-once).");
  out.Sample("muster_kv_kept_replies", {}, static_cast<double>(kept));
  out.Family("muster_kv_operations_total", "counter",
             "Key-value requests answered, by verb and result (ok or error).");
  for (int v = 0; v < static_cast<int>(KvVerb::kCount); ++v) {
    auto verb = static_cast<KvVerb>(v);
    std::string name(KvVerbName(verb));
    out.Sample("muster_kv_operations_total", {{"verb", name}, {"result", "ok"}},
               static_cast<double>(metrics.kv_operations(verb, true)));
    out.Sample("muster_kv_operations_total", {{"verb", name}, {"result", "error"}},
               static_cast<double>(metrics.kv_operations(verb, false)));
  }
  out.Family("muster_kv_operation_duration_seconds", "histogram",
             "Seconds from a key-value request's arrival at its directory to its answer (a "
             "blocked get: its wait), by verb.");
  for (int v = 0; v < static_cast<int>(KvVerb::kCount); ++v) {
    auto verb = static_cast<KvVerb>(v);
    out.Histogram("muster_kv_operation_duration_seconds", {{"verb", std::string(KvVerbName(verb))}},
                  metrics.kv_latency(verb).Read());
  }
}

void Durable(Exposition& out, const LeaderMetrics& metrics) {
  out.Family("muster_durable_write_duration_seconds", "histogram",
             "Seconds per synced write of the state dir (--state-dir).");
  out.Histogram("muster_durable_write_duration_seconds", {}, metrics.durable_write().Read());
  out.Family("muster_durable_write_batches", "histogram",
             "Batches per synced write (the group commit's size).");
  out.Histogram("muster_durable_write_batches", {}, metrics.durable_group_size().Read());
  out.Family("muster_durable_changes_total", "counter", "Puts and deletes written.");
  out.Sample("muster_durable_changes_total", {}, static_cast<double>(metrics.durable_changes()));
}

void Refusals(Exposition& out, const LeaderMetrics& metrics, const WireStats& wire) {
  out.Family("muster_connections", "gauge", "Connections accepted by the leader's port, open now.");
  out.Sample("muster_connections", {}, static_cast<double>(wire.open_inbound));
  out.Family("muster_refused_total", "counter",
             "Connections the wire guard closed and requests the token gate refused, by reason.");
  for (int r = 0; r < static_cast<int>(Refusal::kCount); ++r) {
    auto reason = static_cast<Refusal>(r);
    uint64_t n = metrics.refused(reason) + wire.refused[r];
    out.Sample("muster_refused_total", {{"reason", std::string(RefusalName(reason))}},
               static_cast<double>(n));
  }
}

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string escaped;
  escaped.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      escaped += "\\\\";
    } else if (c == '"') {
      escaped += "\\\"";
    } else if (c == '\n') {
      escaped += "\\n";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

std::string RenderPrometheus(const proto::JobSnapshot& snapshot, const LeaderMetrics& metrics,
                             const WireStats& wire) {
  Exposition out;
  Leader(out, snapshot);
  Tasks(out, snapshot);
  Events(out, metrics);
  Barriers(out, snapshot, metrics);
  KeyValue(out, snapshot, metrics);
  Durable(out, metrics);
  Refusals(out, metrics, wire);
  return out.Take();
}

}  // namespace muster
