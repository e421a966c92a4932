// The pure pieces of the muster command's output: task events between two job snapshots, watch
// event lines, key-value directory counts, and the status report's tables and JSON.
#include "muster/tools/common/task_events.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "muster/messages/task_name.h"
#include "muster/tools/job/status_report.h"
#include "muster/tools/kv/kv_watcher_actor.h"

namespace muster::cli {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

proto::CoordinatedTaskStateInfo State(int task, proto::CoordinatedTaskState state,
                                      uint64_t incarnation = 0, std::string error = "") {
  proto::CoordinatedTaskStateInfo info;
  *info.mutable_task() = MakeTask("worker", task);
  info.set_state(state);
  info.set_incarnation(incarnation);
  if (!error.empty()) {
    info.set_error_code(static_cast<int>(absl::StatusCode::kUnavailable));
    info.set_error_message(std::move(error));
  }
  return info;
}

proto::WatchJobStateResponse Snapshot(std::vector<proto::CoordinatedTaskStateInfo> states) {
  proto::WatchJobStateResponse snapshot;
  for (auto& info : states) *snapshot.add_task_state() = std::move(info);
  return snapshot;
}

TEST(TaskEventsTest, Registration_IsARegisteredEventWithTheIncarnation) {
  auto events = DiffTaskStates(Snapshot({State(0, proto::TASKSTATE_DISCONNECTED)}),
                               Snapshot({State(0, proto::TASKSTATE_CONNECTED, 0xab)}));
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(FormatTaskEvent(events[0]),
            "/job:worker/task:0 registered incarnation=0x00000000000000ab");
}

TEST(TaskEventsTest, HeartbeatTimeout_IsStale) {
  auto events = DiffTaskStates(
      Snapshot({State(0, proto::TASKSTATE_CONNECTED, 1)}),
      Snapshot({State(0, proto::TASKSTATE_ERROR, 1, "Task /job:worker/task:0 heartbeat timeout")}));
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(events[0].kind, TaskEventKind::kStale);
  EXPECT_EQ(FormatTaskEvent(events[0]),
            "/job:worker/task:0 stale: UNAVAILABLE: Task /job:worker/task:0 heartbeat timeout");
}

TEST(TaskEventsTest, OtherError_IsFailed) {
  auto events =
      DiffTaskStates(Snapshot({State(0, proto::TASKSTATE_CONNECTED, 1)}),
                     Snapshot({State(0, proto::TASKSTATE_ERROR, 1, "connection to worker lost")}));
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(events[0].kind, TaskEventKind::kFailed);
}

TEST(TaskEventsTest, ShutdownOrReset_IsDisconnected) {
  auto events = DiffTaskStates(Snapshot({State(0, proto::TASKSTATE_ERROR, 1, "lost")}),
                               Snapshot({State(0, proto::TASKSTATE_DISCONNECTED, 1)}));
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(FormatTaskEvent(events[0]), "/job:worker/task:0 disconnected");
}

TEST(TaskEventsTest, NewIncarnationWhileConnected_IsRegisteredAgain) {
  auto events = DiffTaskStates(Snapshot({State(0, proto::TASKSTATE_CONNECTED, 1)}),
                               Snapshot({State(0, proto::TASKSTATE_CONNECTED, 2)}));
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(events[0].kind, TaskEventKind::kRegistered);
}

TEST(TaskEventsTest, RegisteredAndFailedBetweenSnapshots_GivesBothEvents) {
  auto events =
      DiffTaskStates(Snapshot({State(0, proto::TASKSTATE_DISCONNECTED)}),
                     Snapshot({State(0, proto::TASKSTATE_ERROR, 5, "connection to worker lost")}));
  ASSERT_THAT(events, SizeIs(2));
  EXPECT_EQ(events[0].kind, TaskEventKind::kRegistered);
  EXPECT_EQ(events[1].kind, TaskEventKind::kFailed);
}

TEST(TaskEventsTest, UnchangedTasks_GiveNoEvents) {
  auto snapshot =
      Snapshot({State(0, proto::TASKSTATE_CONNECTED, 1), State(1, proto::TASKSTATE_DISCONNECTED)});
  EXPECT_THAT(DiffTaskStates(snapshot, snapshot), IsEmpty());
}

TEST(TaskEventsTest, FirstSnapshot_ReportsOnlyTasksThatAreNotDisconnected) {
  auto events = DiffTaskStates({}, Snapshot({State(0, proto::TASKSTATE_DISCONNECTED),
                                             State(1, proto::TASKSTATE_CONNECTED, 7)}));
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(events[0].info.task().task_id(), 1);
}

TEST(TaskEventsTest, ChangeEvent_PrintsKindKeyRevisionAndEscapedValue) {
  proto::KeyValueChangeEvent event;
  event.set_kind(proto::KeyValueChangeEvent::INSERTED);
  event.set_key("config/a");
  event.set_value("two\nlines");
  event.set_revision(3);
  EXPECT_EQ(FormatChangeEvent(event), "INSERTED config/a revision=3 value=two\\nlines");
  event.set_kind(proto::KeyValueChangeEvent::DELETED);
  event.clear_value();
  EXPECT_EQ(FormatChangeEvent(event), "DELETED config/a revision=3");
}

TEST(StatusReportTest, KvDirectories_FromTheDirectoriesSizes_EmptyOnesLeftOut) {
  proto::GetKvStatsResponse sizes;
  for (auto [name, keys] : std::vector<std::pair<const char*, int>>{
           {"config", 1}, {"nccl", 2}, {"read_only", 0}, {"single", 1}}) {
    auto* directory = sizes.add_directories();
    directory->set_directory(name);
    directory->set_keys(keys);
  }
  StatusReport report;
  CountKvDirectories(sizes, &report);
  EXPECT_EQ(report.kv_keys(), 4);
  ASSERT_EQ(report.kv_directories_size(), 3);
  EXPECT_EQ(report.kv_directories(0).directory(), "config");
  EXPECT_EQ(report.kv_directories(1).directory(), "nccl");
  EXPECT_EQ(report.kv_directories(1).keys(), 2);
  EXPECT_EQ(report.kv_directories(2).directory(), "single");
}

StatusReport ReportWithBarrier() {
  StatusReport report;
  report.set_leader("127.0.0.1:7400");
  *report.add_tasks() = State(0, proto::TASKSTATE_CONNECTED, 0xab);
  report.mutable_tasks(0)->set_last_heartbeat_age_ms(1500);
  auto* barrier = report.add_barriers();
  barrier->set_barrier_id("init");
  barrier->set_counter(2);
  barrier->set_deadline_in_ms(9500);
  *barrier->mutable_first_task() = MakeTask("worker", 0);
  barrier->set_arrived(1);
  barrier->set_total(4);
  barrier->set_waited_ms(12'300);
  for (int task : {1, 2, 3}) *barrier->add_waiting_for() = MakeTask("worker", task);
  return report;
}

TEST(StatusReportTest, Table_ShowsTasksAndWhatBarriersWaitFor) {
  std::string table = RenderStatusTable(ReportWithBarrier());
  EXPECT_THAT(table, HasSubstr("/job:worker/task:0  CONNECTED  0x00000000000000ab  1.5s ago"));
  EXPECT_THAT(table, HasSubstr("OPEN BARRIERS (1)"));
  EXPECT_THAT(table,
              HasSubstr("init::2  1/4      12.3s   in 9.5s   /job:worker/task:0  worker/[1-3]"));
}

TEST(StatusReportTest, Table_ShowsStepsAndTasksThatHaveNotBeatenYet) {
  StatusReport report = ReportWithBarrier();
  report.mutable_tasks(0)->set_step(41);
  report.mutable_tasks(0)->set_step_age_ms(2500);
  *report.add_tasks() = State(1, proto::TASKSTATE_CONNECTED, 0xcd);
  report.mutable_tasks(1)->set_last_heartbeat_age_ms(-1);
  report.mutable_tasks(1)->set_connected_age_ms(300);
  *report.add_tasks() = State(2, proto::TASKSTATE_DISCONNECTED, 0);
  report.mutable_tasks(2)->set_last_heartbeat_age_ms(-1);
  report.mutable_tasks(2)->set_connected_age_ms(-1);
  std::string table = RenderStatusTable(report);
  EXPECT_THAT(table, ContainsRegex("1\\.5s ago +41 \\(for 2\\.5s\\)"));
  EXPECT_THAT(table, HasSubstr("none yet (registered 0.3s ago)  -"));
  EXPECT_THAT(table, ContainsRegex("/job:worker/task:2 +DISCONNECTED +- +never +-"));
}

TEST(StatusReportTest, Json_RoundTripsThroughTheProto) {
  StatusReport report = ReportWithBarrier();
  std::string json = RenderStatusJson(report);
  EXPECT_EQ(json.find('\n'), std::string::npos);
  EXPECT_THAT(json, HasSubstr("\"state\":\"TASKSTATE_CONNECTED\""));
  EXPECT_THAT(json, HasSubstr("\"last_heartbeat_age_ms\":\"1500\""));
  StatusReport parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok());
  EXPECT_EQ(parsed.barriers(0).waiting_for_size(), 3);
  EXPECT_EQ(parsed.tasks(0).incarnation(), 0xabu);
}

}  // namespace
}  // namespace muster::cli
