// The live page's JSON: valid JSON for any task error text, and the columns, counts, stragglers,
// barriers, directories and events the page draws.
#include "muster/net/observe/page_state.h"

#include <limits>

#include <gmock/gmock.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "muster/messages/task_name.h"
#include "tests/testing/task_columns.h"

namespace muster {
namespace {

google::protobuf::Struct ParseJson(const std::string& json) {
  google::protobuf::Struct parsed;
  auto status = google::protobuf::util::JsonStringToMessage(json, &parsed);
  EXPECT_TRUE(status.ok()) << status << "\n" << json;
  return parsed;
}

const google::protobuf::Value& Field(const google::protobuf::Struct& s, const std::string& name) {
  static const google::protobuf::Value kMissing;
  auto it = s.fields().find(name);
  EXPECT_NE(it, s.fields().end()) << "no field " << name;
  return it == s.fields().end() ? kMissing : it->second;
}

using ::muster::testing::AddTask;

void AddError(proto::JobSnapshot& snapshot, int index, absl::StatusCode code,
              const std::string& message) {
  proto::TaskColumnError* error = snapshot.mutable_tasks()->add_errors();
  error->set_index(index);
  error->set_code(static_cast<int>(code));
  error->set_message(message);
}

TEST(PageStateTest, TasksAsColumns_CountsAndStragglers) {
  proto::JobSnapshot snapshot;
  snapshot.set_leader_incarnation(0x1f);
  snapshot.set_uptime_ms(1234);
  AddTask(snapshot, "worker", proto::TASKSTATE_CONNECTED, 12, 10);
  AddTask(snapshot, "worker", proto::TASKSTATE_CONNECTED, 30, 7);
  int failed = AddTask(snapshot, "worker", proto::TASKSTATE_ERROR);
  AddError(snapshot, failed, absl::StatusCode::kUnavailable, "connection to worker lost");
  AddTask(snapshot, "ps", proto::TASKSTATE_DISCONNECTED);

  auto state = ParseJson(RenderPageState(snapshot, "127.0.0.1:7400"));
  const auto& leader = Field(state, "leader").struct_value();
  EXPECT_EQ(Field(leader, "address").string_value(), "127.0.0.1:7400");
  EXPECT_EQ(Field(leader, "incarnation").string_value(), "0x000000000000001f");
  EXPECT_EQ(Field(leader, "uptime_ms").number_value(), 1234);
  const auto& jobs = Field(state, "jobs").list_value();
  ASSERT_EQ(jobs.values_size(), 2);
  EXPECT_EQ(Field(jobs.values(0).struct_value(), "name").string_value(), "worker");
  EXPECT_EQ(Field(jobs.values(0).struct_value(), "count").number_value(), 3);
  EXPECT_EQ(Field(jobs.values(1).struct_value(), "first").number_value(), 3);
  const auto& tasks = Field(state, "tasks").struct_value();
  EXPECT_EQ(Field(tasks, "count").number_value(), 4);
  EXPECT_EQ(Field(tasks, "state").string_value(), "CCED");
  EXPECT_EQ(Field(tasks, "hb_ms").list_value().values(1).number_value(), 30);
  EXPECT_EQ(Field(tasks, "hb_ms").list_value().values(2).number_value(), -1);
  EXPECT_EQ(Field(tasks, "step").list_value().values(0).number_value(), 10);
  EXPECT_TRUE(Field(tasks, "step").list_value().values(2).has_null_value());
  const auto& counts = Field(state, "counts").struct_value();
  EXPECT_EQ(Field(counts, "connected").number_value(), 2);
  EXPECT_EQ(Field(counts, "error").number_value(), 1);
  EXPECT_EQ(Field(counts, "disconnected").number_value(), 1);
  const auto& errors = Field(state, "errors").list_value();
  ASSERT_EQ(errors.values_size(), 1);
  EXPECT_EQ(Field(errors.values(0).struct_value(), "task").string_value(), "/job:worker/task:2");
  EXPECT_EQ(Field(errors.values(0).struct_value(), "code").string_value(), "UNAVAILABLE");
  // The straggler (step 7) comes first.
  const auto& slowest = Field(state, "slowest").list_value();
  ASSERT_EQ(slowest.values_size(), 2);
  EXPECT_EQ(Field(slowest.values(0).struct_value(), "task").string_value(), "/job:worker/task:1");
  EXPECT_TRUE(Field(state, "first_error").has_null_value());
}

TEST(PageStateTest, BarriersDirectoriesEventsAndFirstError) {
  proto::JobSnapshot snapshot;
  auto* barrier = snapshot.add_barriers();
  barrier->set_barrier_id("init");
  barrier->set_counter(2);
  barrier->set_arrived(1);
  barrier->set_total(2);
  *barrier->add_waiting_for() = MakeTask("worker", 1);
  auto* dir = snapshot.add_kv_directories();
  dir->set_directory("config");
  dir->set_keys(3);
  dir->set_value_bytes(120);
  auto* event = snapshot.add_recent_events();
  event->set_seq(4);
  event->set_kind(proto::TASK_FAILED);
  *event->mutable_task() = MakeTask("worker", 1);
  event->set_error_code(static_cast<int>(absl::StatusCode::kUnavailable));
  event->set_error_message("lost");
  *snapshot.mutable_first_error() = *event;

  auto state = ParseJson(RenderPageState(snapshot, "h:1"));
  const auto& b = Field(state, "barriers").list_value().values(0).struct_value();
  EXPECT_EQ(Field(b, "id").string_value(), "init");
  EXPECT_EQ(Field(b, "missing_count").number_value(), 1);
  EXPECT_EQ(Field(b, "missing").list_value().values(0).string_value(), "/job:worker/task:1");
  const auto& d = Field(state, "kv").list_value().values(0).struct_value();
  EXPECT_EQ(Field(d, "bytes").number_value(), 120);
  const auto& e = Field(state, "events").list_value().values(0).struct_value();
  EXPECT_EQ(Field(e, "kind").string_value(), "TASK_FAILED");
  EXPECT_THAT(Field(e, "text").string_value(), ::testing::HasSubstr("UNAVAILABLE: lost"));
  const auto& first = Field(state, "first_error").struct_value();
  EXPECT_EQ(Field(first, "task").string_value(), "/job:worker/task:1");
  EXPECT_EQ(Field(first, "message").string_value(), "lost");
}

TEST(PageStateTest, JsonString_AnyBytesGiveValidJson) {
  EXPECT_EQ(JsonString("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_EQ(JsonString("caf\xc3\xa9"), "\"caf\xc3\xa9\"");        // UTF-8 kept
  EXPECT_EQ(JsonString("bad\xff\xc3"), "\"bad\\ufffd\\ufffd\"");  // replaced
  proto::JobSnapshot snapshot;
  int failed = AddTask(snapshot, "w\xfe\"", proto::TASKSTATE_ERROR);
  AddError(snapshot, failed, absl::StatusCode::kInternal, std::string("\0\xff\x7f<", 4));
  ParseJson(RenderPageState(snapshot, "h:1"));
}

}  // namespace
}  // namespace muster
