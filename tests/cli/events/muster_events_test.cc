// The event log with real processes: `muster serve --events FILE` and two examples/worker
// processes, one killed with SIGKILL. The file holds one valid JSON object per line (parsed
// strictly) with the leader's start, both registrations (with the incarnations the leader
// logged) and the failure; `muster events` prints the same events, `--json` the same lines;
// `--follow` prints an event that happens after it started and ends like `kv watch`; `muster
// status --bring-up` lists both registrations.
#include <csignal>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <absl/time/clock.h>
#include <gmock/gmock.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "tests/cli/cli_process.h"

namespace muster::cli {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

std::unique_ptr<Subprocess> StartWorker(const Leader& leader, int task) {
  auto worker = Subprocess::Start(
      {MUSTER_WORKER_BIN, leader.leader_flag(), absl::StrCat("--task=", task), "--hold"});
  EXPECT_TRUE(worker.ok()) << worker.status();
  return worker.ok() ? *std::move(worker) : nullptr;
}

// The incarnation the leader logged last for `task` ("... registered incarnation=0x...").
std::string RegisteredIncarnation(const Subprocess& leader, int task) {
  const std::string needle = absl::StrCat("/job:worker/task:", task, " registered incarnation=");
  size_t at = leader.output().rfind(needle);
  EXPECT_NE(at, std::string::npos) << leader.output();
  return at == std::string::npos ? "" : leader.output().substr(at + needle.size(), 18);
}

// Waits until the leader logged `count` more registrations.
void WaitForRegistrations(Subprocess& leader, int count) {
  for (int i = 0; i < count; ++i) {
    ASSERT_TRUE(leader.WaitForLine(" registered incarnation=", kBound).ok()) << leader.output();
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// Each line parsed strictly as a JSON object.
std::vector<google::protobuf::Struct> ParseLines(const std::vector<std::string>& lines) {
  std::vector<google::protobuf::Struct> events;
  for (const std::string& line : lines) {
    google::protobuf::Struct event;
    auto status = google::protobuf::util::JsonStringToMessage(line, &event);
    EXPECT_TRUE(status.ok()) << status << "\n" << line;
    events.push_back(std::move(event));
  }
  return events;
}

std::string Field(const google::protobuf::Struct& event, const std::string& key) {
  auto it = event.fields().find(key);
  if (it == event.fields().end()) return "";
  if (it->second.has_number_value()) return absl::StrCat(it->second.number_value());
  return it->second.string_value();
}

// The events of `kind` (about `task`, when given).
std::vector<google::protobuf::Struct> OfKind(const std::vector<google::protobuf::Struct>& events,
                                             const std::string& kind,
                                             const std::string& task = "") {
  std::vector<google::protobuf::Struct> found;
  for (const auto& event : events) {
    if (Field(event, "kind") == kind && (task.empty() || Field(event, "task") == task)) {
      found.push_back(event);
    }
  }
  return found;
}

// Waits until the file at `path` has a line containing `needle`; returns its content.
std::string WaitForFileLine(const std::string& path, const std::string& needle) {
  absl::Time deadline = absl::Now() + kBound;
  std::string text = ReadFile(path);
  while (!absl::StrContains(text, needle) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
    text = ReadFile(path);
  }
  EXPECT_THAT(text, HasSubstr(needle));
  return text;
}

class MusterEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/muster_events_test_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl";
    std::remove(path_.c_str());
  }

  std::string path_;
};

TEST_F(MusterEventsTest, KilledWorker_FileCommandFollowAndBringUpAgree) {
  Leader leader({"--job=worker=2", "--recoverable-job=worker", "--events=" + path_});
  ASSERT_TRUE(leader.ok());
  auto w0 = StartWorker(leader, 0);
  auto w1 = StartWorker(leader, 1);
  ASSERT_TRUE(w0 != nullptr && w1 != nullptr);
  WaitForRegistrations(leader.process(), 2);
  const std::string inc0 = RegisteredIncarnation(leader.process(), 0);
  const std::string inc1 = RegisteredIncarnation(leader.process(), 1);
  ASSERT_TRUE(w0->WaitForLine(" holding ", kBound).ok()) << w0->output();
  ASSERT_TRUE(w1->WaitForLine(" holding ", kBound).ok()) << w1->output();

  Result bring_up = RunMuster({"status", leader.leader_flag(), "--bring-up"});
  EXPECT_EQ(bring_up.code, 0) << bring_up.output;
  EXPECT_THAT(bring_up.output, HasSubstr("2 of 2 tasks connected"));
  EXPECT_THAT(bring_up.output, ContainsRegex("first registered +/job:worker/task:[01] "));
  EXPECT_THAT(bring_up.output, HasSubstr("LAST TO REGISTER (2 of 2)"));
  EXPECT_THAT(bring_up.output, ContainsRegex("/job:worker/task:0 +[0-9.]+s ago +"));
  EXPECT_THAT(bring_up.output, ContainsRegex("/job:worker/task:1 +[0-9.]+s ago +"));
  EXPECT_THAT(bring_up.output, HasSubstr("the median"));

  w1->Signal(SIGKILL);
  (void)Finish(*w1);
  ASSERT_TRUE(leader.process().WaitForLine("/job:worker/task:1 failed", kBound).ok())
      << leader.process().output();

  // The file: valid JSON lines, the start, both registrations and the failure.
  const std::string text = WaitForFileLine(path_, "\"kind\":\"TASK_FAILED\"");
  const std::vector<std::string> file_lines = Lines(text);
  std::vector<google::protobuf::Struct> events = ParseLines(file_lines);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(Field(events[0], "kind"), "LEADER_STARTED");
  EXPECT_EQ(Field(events[0], "seq"), "1");
  EXPECT_EQ(Field(events[0], "detail"), "fresh");
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(Field(events[i], "seq"), absl::StrCat(i + 1));
    EXPECT_THAT(Field(events[i], "time"),
                ContainsRegex("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{3}Z$"));
  }
  auto registered0 = OfKind(events, "TASK_REGISTERED", "/job:worker/task:0");
  auto registered1 = OfKind(events, "TASK_REGISTERED", "/job:worker/task:1");
  ASSERT_EQ(registered0.size(), 1u) << text;
  ASSERT_EQ(registered1.size(), 1u) << text;
  EXPECT_EQ(Field(registered0[0], "incarnation"), inc0);
  EXPECT_EQ(Field(registered1[0], "incarnation"), inc1);
  EXPECT_EQ(Field(registered1[0], "state"), "TASKSTATE_CONNECTED");
  auto failed = OfKind(events, "TASK_FAILED", "/job:worker/task:1");
  ASSERT_EQ(failed.size(), 1u) << text;
  EXPECT_EQ(Field(failed[0], "error_code"), "UNAVAILABLE");
  EXPECT_THAT(Field(failed[0], "error_message"), HasSubstr("connection to worker lost"));
  EXPECT_EQ(Field(failed[0], "incarnation"), inc1);
  EXPECT_EQ(Field(failed[0], "state"), "TASKSTATE_ERROR");
  EXPECT_TRUE(OfKind(events, "TASK_FAILED", "/job:worker/task:0").empty());
  EXPECT_FALSE(OfKind(events, "BARRIER_PASSED").empty());  // the worker's ready_to_train

  // `muster events --json`: the same lines; `muster events`: the same events in words.
  Result json = RunMuster({"events", leader.leader_flag(), "--json"});
  EXPECT_EQ(json.code, 0) << json.output;
  EXPECT_EQ(Lines(json.output), file_lines);
  Result words = RunMuster({"events", leader.leader_flag()});
  EXPECT_EQ(words.code, 0) << words.output;
  EXPECT_EQ(Lines(words.output).size(), file_lines.size()) << words.output;
  EXPECT_THAT(words.output, ContainsRegex("LEADER_STARTED +incarnation 0x[0-9a-f]{16}; fresh"));
  EXPECT_THAT(words.output,
              HasSubstr("TASK_REGISTERED     /job:worker/task:0  incarnation " + inc0));
  EXPECT_THAT(words.output,
              HasSubstr("TASK_REGISTERED     /job:worker/task:1  incarnation " + inc1));
  EXPECT_THAT(words.output, HasSubstr("TASK_FAILED         /job:worker/task:1  incarnation " +
                                      inc1 + "; UNAVAILABLE: "));

  // --follow: what is kept, then a new event: task 1 registering again.
  auto follow = StartMuster({"events", leader.leader_flag(), "--follow", "--json"});
  ASSERT_NE(follow, nullptr);
  ASSERT_TRUE(follow->WaitForLine("\"kind\":\"TASK_FAILED\"", kBound).ok()) << follow->output();
  auto again = StartWorker(leader, 1);
  ASSERT_NE(again, nullptr);
  WaitForRegistrations(leader.process(), 1);
  const std::string inc_again = RegisteredIncarnation(leader.process(), 1);
  auto line =
      follow->WaitForLine("\"kind\":\"TASK_REGISTERED\",\"task\":\"/job:worker/task:1\"", kBound);
  ASSERT_TRUE(line.ok()) << follow->output();
  EXPECT_THAT(*line, HasSubstr(absl::StrCat("\"seq\":", file_lines.size() + 1, ",")));
  EXPECT_THAT(*line, HasSubstr("\"incarnation\":\"" + inc_again + "\""));
  EXPECT_NE(inc_again, inc1);
  follow->Signal(SIGINT);
  Result followed = Finish(*follow);
  EXPECT_EQ(followed.code, 0) << followed.output;
  EXPECT_THAT(WaitForFileLine(path_, inc_again), HasSubstr(*line));  // the file has it too

  again->Signal(SIGKILL);
  w0->Signal(SIGKILL);
  (void)Finish(*again);
  (void)Finish(*w0);
}

TEST_F(MusterEventsTest, Follow_LeaderGoesAway_ExitsOneSayingSo) {
  Leader leader({"--job=worker=1"});
  ASSERT_TRUE(leader.ok());
  auto follow = StartMuster({"events", leader.leader_flag(), "--follow"});
  ASSERT_NE(follow, nullptr);
  ASSERT_TRUE(follow->WaitForLine("LEADER_STARTED", kBound).ok()) << follow->output();
  leader.process().Signal(SIGKILL);
  Result result = Finish(*follow);
  EXPECT_EQ(result.code, 1) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("muster events: UNAVAILABLE: lost the leader at " + leader.address()));
}

TEST_F(MusterEventsTest, Serve_UnwritableEventFile_FailsAtStartNamingIt) {
  const std::string path = ::testing::TempDir() + "/no/such/dir/events.jsonl";
  Result result = RunMuster({"serve", "--port=0", "--job=worker=1", "--events=" + path});
  EXPECT_EQ(result.code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("muster serve: NOT_FOUND: cannot open the event file " +
                                       path + " for appending"));
}

}  // namespace
}  // namespace muster::cli
