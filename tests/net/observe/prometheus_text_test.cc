// The leader's metrics as Prometheus reads them: every line follows the text format's rules
// (checked by a parser written from the format's specification), and the values say what the
// snapshot and the counters hold.
#include "muster/net/observe/prometheus_text.h"

#include <limits>
#include <map>
#include <regex>
#include <set>

#include <absl/strings/numbers.h>
#include <absl/strings/str_split.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/task_name.h"
#include "tests/testing/task_columns.h"

namespace muster {
namespace {

using ::testing::HasSubstr;

// One sample: its name, its labels as written (escapes undone), and its value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses the text format 0.0.4, failing the test on any line that breaks its rules: every
// sample belongs to a family declared by a TYPE line before it, names and label names are
// valid, label values are quoted with only \\, \" and \n escaped, values are numbers, no family
// is declared twice, and a histogram's buckets rise up to +Inf, which equals its _count.
std::vector<Sample> Parse(const std::string& text) {
  static const std::regex kName("[a-zA-Z_:][a-zA-Z0-9_:]*");
  static const std::regex kLabelName("[a-zA-Z_][a-zA-Z0-9_]*");
  std::map<std::string, std::string> types;
  std::vector<Sample> samples;
  EXPECT_TRUE(!text.empty() && text.back() == '\n') << "the text ends with a line feed";
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::string l(line);
    if (l.rfind("# HELP ", 0) == 0) {
      std::vector<std::string> parts = absl::StrSplit(l.substr(7), absl::MaxSplits(' ', 1));
      EXPECT_TRUE(std::regex_match(parts[0], kName)) << l;
      continue;
    }
    if (l.rfind("# TYPE ", 0) == 0) {
      std::vector<std::string> parts = absl::StrSplit(l.substr(7), ' ');
      EXPECT_EQ(parts.size(), 2u) << l;
      EXPECT_TRUE(std::regex_match(parts[0], kName)) << l;
      EXPECT_THAT((std::set<std::string>{"counter", "gauge", "histogram", "summary", "untyped"}),
                  ::testing::Contains(parts[1]))
          << l;
      EXPECT_FALSE(types.count(parts[0])) << "declared twice: " << l;
      types[parts[0]] = parts[1];
      continue;
    }
    EXPECT_NE(l[0], '#') << "an unknown comment: " << l;
    Sample sample;
    size_t i = 0;
    while (i < l.size() && l[i] != '{' && l[i] != ' ') ++i;
    sample.name = l.substr(0, i);
    EXPECT_TRUE(std::regex_match(sample.name, kName)) << l;
    if (i < l.size() && l[i] == '{') {
      ++i;
      while (i < l.size() && l[i] != '}') {
        size_t eq = l.find('=', i);
        EXPECT_NE(eq, std::string::npos) << l;
        if (eq == std::string::npos) return samples;
        std::string label = l.substr(i, eq - i);
        EXPECT_TRUE(std::regex_match(label, kLabelName)) << l;
        EXPECT_EQ(l[eq + 1], '"') << l;
        std::string value;
        size_t k = eq + 2;
        for (; k < l.size() && l[k] != '"'; ++k) {
          if (l[k] == '\\') {
            ++k;
            EXPECT_TRUE(l[k] == '\\' || l[k] == '"' || l[k] == 'n') << "bad escape: " << l;
            value += l[k] == 'n' ? '\n' : l[k];
          } else {
            value += l[k];
          }
        }
        EXPECT_LT(k, l.size()) << "unterminated label value: " << l;
        sample.labels[label] = value;
        i = k + 1;
        if (i < l.size() && l[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    EXPECT_EQ(l[i], ' ') << l;
    std::string value = l.substr(i + 1);
    if (value == "+Inf") {
      sample.value = HUGE_VAL;
    } else {
      EXPECT_TRUE(absl::SimpleAtod(value, &sample.value)) << "not a number: " << l;
    }
    std::string family = sample.name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      std::string s(suffix);
      if (!types.count(family) && family.size() > s.size() &&
          family.compare(family.size() - s.size(), s.size(), s) == 0) {
        std::string base = family.substr(0, family.size() - s.size());
        if (types.count(base) && types[base] == "histogram") family = base;
      }
    }
    EXPECT_TRUE(types.count(family)) << "a sample before its TYPE line: " << l;
    samples.push_back(std::move(sample));
  }
  // Histograms: per label set, buckets never fall, and +Inf equals _count.
  std::map<std::string, std::vector<const Sample*>> buckets;
  std::map<std::string, double> counts;
  for (const Sample& s : samples) {
    auto key = [&](const Sample& x, const std::string& base) {
      std::string k = base;
      for (const auto& [name, value] : x.labels) {
        if (name != "le") k += "|" + name + "=" + value;
      }
      return k;
    };
    if (s.name.size() > 7 && s.name.substr(s.name.size() - 7) == "_bucket") {
      buckets[key(s, s.name.substr(0, s.name.size() - 7))].push_back(&s);
    } else if (s.name.size() > 6 && s.name.substr(s.name.size() - 6) == "_count") {
      counts[key(s, s.name.substr(0, s.name.size() - 6))] = s.value;
    }
  }
  for (const auto& [key, list] : buckets) {
    for (size_t i = 1; i < list.size(); ++i) EXPECT_GE(list[i]->value, list[i - 1]->value) << key;
    EXPECT_EQ(list.back()->labels.at("le"), "+Inf") << key;
    EXPECT_EQ(list.back()->value, counts[key]) << key;
  }
  return samples;
}

double Value(const std::vector<Sample>& samples, const std::string& name,
             std::map<std::string, std::string> labels = {}) {
  for (const Sample& s : samples) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  ADD_FAILURE() << "no sample " << name;
  return -1;
}

using ::muster::testing::AddTask;

TEST(PrometheusTextTest, EmptyLeader_IsValidText) {
  LeaderMetrics metrics;
  proto::JobSnapshot snapshot;
  snapshot.set_leader_incarnation(0xabc);
  std::vector<Sample> samples = Parse(RenderPrometheus(snapshot, metrics, WireStats{}));
  EXPECT_EQ(Value(samples, "muster_leader_info", {{"incarnation", "0000000000000abc"}}), 1);
  EXPECT_EQ(Value(samples, "muster_kv_keys"), 0);
  EXPECT_EQ(Value(samples, "muster_barriers_open"), 0);
}

TEST(PrometheusTextTest, Tasks_ByJobAndState_WithHeartbeatAges) {
  LeaderMetrics metrics;
  proto::JobSnapshot snapshot;
  AddTask(snapshot, "worker", proto::TASKSTATE_CONNECTED, 200);
  AddTask(snapshot, "worker", proto::TASKSTATE_CONNECTED, 3'000);
  AddTask(snapshot, "worker", proto::TASKSTATE_ERROR, -1);
  AddTask(snapshot, "ps", proto::TASKSTATE_DISCONNECTED, -1);
  std::vector<Sample> samples = Parse(RenderPrometheus(snapshot, metrics, WireStats{}));
  EXPECT_EQ(Value(samples, "muster_tasks", {{"job", "worker"}, {"state", "connected"}}), 2);
  EXPECT_EQ(Value(samples, "muster_tasks", {{"job", "worker"}, {"state", "error"}}), 1);
  EXPECT_EQ(Value(samples, "muster_tasks", {{"job", "worker"}, {"state", "disconnected"}}), 0);
  EXPECT_EQ(Value(samples, "muster_tasks", {{"job", "ps"}, {"state", "disconnected"}}), 1);
  // 0.2 s is under the 0.25 s bucket; 3 s only from the 5 s bucket on.
  EXPECT_EQ(Value(samples, "muster_task_heartbeat_age_seconds_bucket",
                  {{"job", "worker"}, {"le", "0.25"}}),
            1);
  EXPECT_EQ(
      Value(samples, "muster_task_heartbeat_age_seconds_bucket", {{"job", "worker"}, {"le", "5"}}),
      2);
  EXPECT_EQ(Value(samples, "muster_task_heartbeat_age_seconds_count", {{"job", "worker"}}), 2);
  EXPECT_DOUBLE_EQ(Value(samples, "muster_task_heartbeat_age_seconds_sum", {{"job", "worker"}}),
                   3.2);
}

TEST(PrometheusTextTest, Counters_KvOperationsFailuresAndRefusals) {
  LeaderMetrics metrics;
  metrics.KvDone(KvVerb::kInsertKeyValue, absl::StatusCode::kOk, std::chrono::microseconds(30));
  metrics.KvDone(KvVerb::kInsertKeyValue, absl::StatusCode::kAlreadyExists,
                 std::chrono::microseconds(20));
  metrics.KvDone(KvVerb::kGetKeyValue, absl::StatusCode::kOk, std::chrono::seconds(2));
  proto::JobEvent failed;
  failed.set_kind(proto::TASK_FAILED);
  failed.set_error_code(static_cast<int>(absl::StatusCode::kUnavailable));
  metrics.CountEvent(failed);
  metrics.Refused(Refusal::kWrongToken);
  WireStats wire;
  wire.open_inbound = 3;
  wire.refused[static_cast<int>(Refusal::kHandshakeTimeout)] = 2;
  std::vector<Sample> samples = Parse(RenderPrometheus(proto::JobSnapshot(), metrics, wire));
  EXPECT_EQ(Value(samples, "muster_kv_operations_total", {{"verb", "insert"}, {"result", "ok"}}),
            1);
  EXPECT_EQ(Value(samples, "muster_kv_operations_total", {{"verb", "insert"}, {"result", "error"}}),
            1);
  EXPECT_EQ(
      Value(samples, "muster_kv_operation_duration_seconds_bucket", {{"verb", "get"}, {"le", "1"}}),
      0);
  EXPECT_EQ(Value(samples, "muster_kv_operation_duration_seconds_bucket",
                  {{"verb", "get"}, {"le", "2.5"}}),
            1);
  EXPECT_EQ(Value(samples, "muster_kv_operation_duration_seconds_bucket",
                  {{"verb", "insert"}, {"le", "2.5e-05"}}),
            1);
  EXPECT_EQ(Value(samples, "muster_task_failures_total", {{"cause", "unavailable"}}), 1);
  EXPECT_EQ(Value(samples, "muster_refused_total", {{"reason", "wrong_token"}}), 1);
  EXPECT_EQ(Value(samples, "muster_refused_total", {{"reason", "handshake_timeout"}}), 2);
  EXPECT_EQ(Value(samples, "muster_connections"), 3);
}

TEST(PrometheusTextTest, BarriersAndKeyValueSizes) {
  LeaderMetrics metrics;
  proto::JobSnapshot snapshot;
  auto* barrier = snapshot.add_barriers();
  barrier->set_barrier_id("init");
  barrier->set_arrived(3);
  barrier->set_total(5);
  barrier->set_waited_ms(1500);
  auto* dir = snapshot.add_kv_directories();
  dir->set_directory("config");
  dir->set_keys(4);
  dir->set_value_bytes(100);
  dir->set_parked_gets(2);
  dir->set_watches(1);
  dir->set_kept_replies(7);
  snapshot.add_kv_directories()->set_kept_replies(5);
  std::vector<Sample> samples = Parse(RenderPrometheus(snapshot, metrics, WireStats{}));
  EXPECT_EQ(Value(samples, "muster_barriers_open"), 1);
  EXPECT_EQ(Value(samples, "muster_barrier_missing_tasks"), 2);
  EXPECT_EQ(Value(samples, "muster_barrier_oldest_wait_seconds"), 1.5);
  EXPECT_EQ(Value(samples, "muster_kv_keys"), 4);
  EXPECT_EQ(Value(samples, "muster_kv_bytes"), 100);
  EXPECT_EQ(Value(samples, "muster_kv_parked_calls"), 2);
  EXPECT_EQ(Value(samples, "muster_kv_watches"), 1);
  EXPECT_EQ(Value(samples, "muster_kv_kept_replies"), 12);  // of every directory
}

TEST(PrometheusTextTest, LabelValues_AreEscaped) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  LeaderMetrics metrics;
  proto::JobSnapshot snapshot;
  AddTask(snapshot, "we\"ird\\job", proto::TASKSTATE_CONNECTED, 1);
  std::vector<Sample> samples = Parse(RenderPrometheus(snapshot, metrics, WireStats{}));
  EXPECT_EQ(Value(samples, "muster_tasks", {{"job", "we\"ird\\job"}, {"state", "connected"}}), 1);
}

}  // namespace
}  // namespace muster
