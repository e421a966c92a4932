// The event log without actors: seq numbering, the ring, the slices WatchEvents returns, wall
// times derived from the monotonic clock, the JSON line of an event (parsed back strictly), and
// the event file.
#include "muster/actors/observe/events/event_log.h"

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "muster/actors/observe/events/event_file.h"
#include "muster/messages/task_name.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::HasSubstr;

// 2024-05-01T12:00:00Z
const absl::Time kWallBase = absl::FromUnixSeconds(1714564800);
constexpr int64_t kMonotonicBase = 5'000'000'000;

proto::JobEvent Kind(proto::JobEventKind kind) {
  proto::JobEvent event;
  event.set_kind(kind);
  return event;
}

// `line` parsed strictly as a JSON object; fails the test when it is not one.
google::protobuf::Struct Parse(const std::string& line) {
  google::protobuf::Struct object;
  auto status = google::protobuf::util::JsonStringToMessage(line, &object);
  EXPECT_TRUE(status.ok()) << status << "\n" << line;
  return object;
}

TEST(EventLogTest, Append_NumbersFromOneAndStampsTimes) {
  EventLog log(kWallBase, kMonotonicBase);
  EXPECT_EQ(log.last_seq(), 0);
  EXPECT_EQ(log.first_kept_seq(), 1);
  const proto::JobEvent& first = log.Append(Kind(proto::LEADER_STARTED), kMonotonicBase);
  EXPECT_EQ(first.seq(), 1);
  EXPECT_EQ(first.monotonic_ns(), kMonotonicBase);
  EXPECT_EQ(first.unix_ms(), 1714564800'000);
  const proto::JobEvent& second =
      log.Append(Kind(proto::TASK_REGISTERED), kMonotonicBase + 1'234'567'890);
  EXPECT_EQ(second.seq(), 2);
  EXPECT_EQ(second.unix_ms(), 1714564801'234);
  EXPECT_EQ(log.last_seq(), 2);
  EXPECT_EQ(log.first_kept_seq(), 1);
}

TEST(EventLogTest, Append_PastCapacity_DropsTheOldest) {
  EventLog log(kWallBase, 0, /*capacity=*/3);
  for (int i = 0; i < 5; ++i) log.Append(Kind(proto::TASK_STATE_CHANGED), i);
  EXPECT_EQ(log.size(), 3u);
  EXPECT_EQ(log.first_kept_seq(), 3);
  EXPECT_EQ(log.last_seq(), 5);
  proto::WatchEventsResponse all = log.After(0, 100);
  ASSERT_EQ(all.events_size(), 3);
  EXPECT_EQ(all.events(0).seq(), 3);
  EXPECT_EQ(all.events(2).seq(), 5);
  EXPECT_EQ(all.first_kept_seq(), 3);
  EXPECT_EQ(all.last_seq(), 5);
}

TEST(EventLogTest, DefaultCapacity_Keeps4096) {
  EventLog log(kWallBase, 0);
  for (int i = 0; i < 5000; ++i) log.Append(Kind(proto::TASK_STATE_CHANGED), i);
  EXPECT_EQ(log.size(), 4096u);
  EXPECT_EQ(log.first_kept_seq(), 5000 - 4096 + 1);
}

TEST(EventLogTest, After_ReturnsTheSliceAfterTheSeqAtMostMax) {
  EventLog log(kWallBase, 0);
  for (int i = 0; i < 10; ++i) log.Append(Kind(proto::TASK_STATE_CHANGED), i);
  proto::WatchEventsResponse slice = log.After(4, 3);
  ASSERT_EQ(slice.events_size(), 3);
  EXPECT_EQ(slice.events(0).seq(), 5);
  EXPECT_EQ(slice.events(2).seq(), 7);
  EXPECT_EQ(slice.last_seq(), 10);
  EXPECT_EQ(slice.first_kept_seq(), 1);
  EXPECT_EQ(log.After(10, 5).events_size(), 0);
  EXPECT_EQ(log.After(12, 5).events_size(), 0);  // ahead: nothing, last_seq says where it is
  EXPECT_EQ(log.After(12, 5).last_seq(), 10);
  EXPECT_TRUE(log.HasAfter(9));
  EXPECT_FALSE(log.HasAfter(10));
}

TEST(EventLogTest, After_Newest_TheLastMaxAfterTheSeq) {
  EventLog log(kWallBase, 0);
  for (int i = 0; i < 10; ++i) log.Append(Kind(proto::TASK_STATE_CHANGED), i);
  proto::WatchEventsResponse newest = log.After(0, 3, /*newest=*/true);
  ASSERT_EQ(newest.events_size(), 3);
  EXPECT_EQ(newest.events(0).seq(), 8);
  EXPECT_EQ(newest.events(2).seq(), 10);
  EXPECT_EQ(log.After(9, 3, /*newest=*/true).events_size(), 1);  // never before after_seq
}

TEST(EventLogTest, FirstFailure_IsKeptAfterTheRingDropsIt) {
  EventLog log(kWallBase, 0, /*capacity=*/2);
  EXPECT_FALSE(log.After(0, 10).has_first_failure());
  log.Append(Kind(proto::TASK_FAILED), 1);
  log.Append(Kind(proto::TASK_FAILED), 2);
  log.Append(Kind(proto::TASK_STATE_CHANGED), 3);
  proto::WatchEventsResponse slice = log.After(0, 10);
  EXPECT_EQ(slice.first_kept_seq(), 2);
  EXPECT_EQ(slice.first_failure().seq(), 1);
  EXPECT_EQ(slice.first_failure().kind(), proto::TASK_FAILED);
}

TEST(EventLogTest, After_EmptyLog_NoEventsFirstKeptOneLastZero) {
  EventLog log(kWallBase, 0);
  proto::WatchEventsResponse slice = log.After(0, 10);
  EXPECT_EQ(slice.events_size(), 0);
  EXPECT_EQ(slice.first_kept_seq(), 1);
  EXPECT_EQ(slice.last_seq(), 0);
}

TEST(EventJsonTest, FullEvent_EveryKeyInOrder) {
  proto::JobEvent event = Kind(proto::BARRIER_FAILED);
  event.set_seq(7);
  event.set_monotonic_ns(42);
  event.set_unix_ms(1714564800123);
  *event.mutable_task() = MakeTask("worker", 3);
  event.set_incarnation(0xabcdef0123456789ULL);
  event.set_state(proto::TASKSTATE_ERROR);
  event.set_error_code(static_cast<int>(absl::StatusCode::kDeadlineExceeded));
  event.set_error_message("timed out");
  event.set_barrier_id("step");
  event.set_barrier_counter(0);
  *event.add_waiting_for() = MakeTask("ps", 0);
  *event.add_waiting_for() = MakeTask("worker", 1);
  event.set_waiting_count(2);
  event.set_round(2);
  event.set_detail("d");
  EXPECT_EQ(EventJson(event),
            "{\"seq\":7,\"monotonic_ns\":42,\"unix_ms\":1714564800123,"
            "\"time\":\"2024-05-01T12:00:00.123Z\",\"kind\":\"BARRIER_FAILED\","
            "\"task\":\"/job:worker/task:3\",\"incarnation\":\"0xabcdef0123456789\","
            "\"state\":\"TASKSTATE_ERROR\",\"error_code\":\"DEADLINE_EXCEEDED\","
            "\"error_message\":\"timed out\",\"barrier\":\"step\",\"counter\":0,"
            "\"waiting_for\":[\"/job:ps/task:0\",\"/job:worker/task:1\"],\"waiting_count\":2,"
            "\"round\":2,\"detail\":\"d\"}");
  Parse(EventJson(event));
}

TEST(EventJsonTest, OnlyTheFieldsThatAreSet) {
  proto::JobEvent event = Kind(proto::LEADER_STARTED);
  event.set_seq(1);
  event.set_detail("fresh");
  EXPECT_EQ(EventJson(event),
            "{\"seq\":1,\"monotonic_ns\":0,\"unix_ms\":0,\"time\":\"1970-01-01T00:00:00.000Z\","
            "\"kind\":\"LEADER_STARTED\",\"detail\":\"fresh\"}");
}

TEST(EventJsonTest, Incarnation_SixteenHexDigits) {
  proto::JobEvent event = Kind(proto::TASK_REGISTERED);
  event.set_incarnation(0x2a);
  EXPECT_THAT(EventJson(event), HasSubstr("\"incarnation\":\"0x000000000000002a\""));
}

TEST(EventJsonTest, Escaping_QuotesBackslashesAndControlBytes) {
  std::string out;
  AppendJsonString(std::string("a\"b\\c\nd\te\x01\x7f\r\b\f", 14), &out);
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\nd\\te\\u0001\\u007f\\r\\b\\f\"");
  out.clear();
  AppendJsonString(std::string("nul\0byte", 8), &out);
  EXPECT_EQ(out, "\"nul\\u0000byte\"");
}

TEST(EventJsonTest, Escaping_KeepsUtf8ReplacesWhatIsNot) {
  std::string out;
  AppendJsonString("grüße → 日本 🎉", &out);
  EXPECT_EQ(out, "\"grüße → 日本 🎉\"");
  out.clear();
  // A lone continuation byte, a truncated sequence, an overlong '/', a surrogate, > U+10FFFF.
  AppendJsonString("\x80|\xe6\x97|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xff", &out);
  EXPECT_EQ(out,
            "\"\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|"
            "\\ufffd\\ufffd\\ufffd\\ufffd|\\ufffd\"");
}

TEST(EventJsonTest, AnyBytes_AlwaysValidJsonThatKeepsTheText) {
  std::mt19937 random(7);
  for (int round = 0; round < 500; ++round) {
    std::string bytes(random() % 40, '\0');
    for (char& c : bytes) c = static_cast<char>(random() % 256);
    proto::JobEvent event = Kind(proto::TASK_FAILED);
    event.set_error_message(bytes);
    event.set_detail("ok " + bytes);
    google::protobuf::Struct object = Parse(EventJson(event));
    ASSERT_TRUE(object.fields().contains("kind"));
    EXPECT_EQ(object.fields().at("kind").string_value(), "TASK_FAILED");
    if (!bytes.empty()) {
      ASSERT_TRUE(object.fields().contains("error_message"));
    }
  }
  // Printable ASCII comes back exactly.
  proto::JobEvent event = Kind(proto::TASK_FAILED);
  event.set_error_message("connection to worker lost: \"x\" \\ y");
  EXPECT_EQ(Parse(EventJson(event)).fields().at("error_message").string_value(),
            "connection to worker lost: \"x\" \\ y");
}

TEST(EventJsonTest, UnknownCodesAndKinds_Numbers) {
  proto::JobEvent event;
  event.set_kind(static_cast<proto::JobEventKind>(99));
  event.set_error_code(77);
  std::string line = EventJson(event);
  EXPECT_THAT(line, HasSubstr("\"kind\":\"99\""));
  EXPECT_THAT(line, HasSubstr("\"error_code\":\"77\""));
  Parse(line);
}

TEST(EventTimeUtcTest, Rfc3339WithMilliseconds) {
  EXPECT_EQ(EventTimeUtc(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(EventTimeUtc(1714564800005), "2024-05-01T12:00:00.005Z");
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(EventFileTest, Append_AddsTheLinesToWhatIsThere) {
  const std::string path = ::testing::TempDir() + "/event_file_append.jsonl";
  std::remove(path.c_str());
  {
    auto file = EventFile::Open(path);
    ASSERT_THAT(file.status(), IsOk());
    ASSERT_THAT((*file)->Append("{\"seq\":1}\n"), IsOk());
  }
  auto again = EventFile::Open(path);  // a restarted leader appends
  ASSERT_THAT(again.status(), IsOk());
  ASSERT_THAT((*again)->Append("{\"seq\":1}\n{\"seq\":2}\n"), IsOk());
  EXPECT_EQ(ReadFile(path), "{\"seq\":1}\n{\"seq\":1}\n{\"seq\":2}\n");
}

TEST(EventFileTest, Open_MissingDirectory_NamesThePath) {
  const std::string path = ::testing::TempDir() + "/no/such/dir/events.jsonl";
  EXPECT_THAT(EventFile::Open(path).status(),
              StatusIs(absl::StatusCode::kNotFound,
                       ::testing::AllOf(HasSubstr(path), HasSubstr("--events FILE"))));
}

TEST(EventFileTest, Open_ADirectory_Refused) {
  EXPECT_THAT(EventFile::Open(::testing::TempDir()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("event file")));
  EXPECT_THAT(EventFile::Open("").status(), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace muster
