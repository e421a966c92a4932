// SnapshotBuilder: the parts of one snapshot, the newest events kept across snapshots, and the
// job's first task failure.
#include "muster/actors/observe/snapshot_builder.h"

#include <gtest/gtest.h>

#include "muster/messages/task_name.h"

namespace muster {
namespace {

proto::WatchEventsResponse Events(int64_t first, int64_t last, int64_t failed_seq = 0) {
  proto::WatchEventsResponse response;
  for (int64_t seq = first; seq <= last; ++seq) {
    auto* event = response.add_events();
    event->set_seq(seq);
    event->set_kind(seq == failed_seq ? proto::TASK_FAILED : proto::TASK_REGISTERED);
    *event->mutable_task() = MakeTask("worker", static_cast<int>(seq));
  }
  response.set_last_seq(last);
  return response;
}

TEST(SnapshotBuilderTest, Build_TakesThePartsAndStartsOver) {
  SnapshotBuilder builder;
  builder.Start();
  proto::TaskColumns tasks;
  tasks.add_job_names("worker");
  tasks.add_job_sizes(1);
  tasks.set_states(std::string(1, static_cast<char>(proto::TASKSTATE_CONNECTED)));
  tasks.set_version(3);
  builder.SetTasks(tasks);
  proto::GetKvStatsResponse kv;
  kv.add_directories()->set_directory("config");
  builder.SetKvStats(kv);
  auto snapshot = builder.Build(5, 1000, 20);
  EXPECT_EQ(snapshot->tasks().states().size(), 1u);
  EXPECT_EQ(snapshot->version(), 3);
  EXPECT_EQ(snapshot->kv_directories_size(), 1);
  EXPECT_EQ(snapshot->leader_incarnation(), 5u);
  EXPECT_EQ(snapshot->taken_unix_ms(), 1000);
  EXPECT_EQ(snapshot->uptime_ms(), 20);
  builder.Start();
  EXPECT_FALSE(builder.Build(5, 1000, 20)->has_tasks());
}

TEST(SnapshotBuilderTest, KeepsTheNewestEvents_AndTheFirstFailure) {
  SnapshotBuilder builder(/*recent_events=*/3);
  builder.AddEvents(Events(1, 4, /*failed_seq=*/2));
  EXPECT_EQ(builder.last_event_seq(), 4);
  builder.AddEvents(Events(3, 6, /*failed_seq=*/5));  // 3 and 4 again: ignored
  auto snapshot = builder.Build(1, 0, 0);
  ASSERT_EQ(snapshot->recent_events_size(), 3);
  EXPECT_EQ(snapshot->recent_events(0).seq(), 4);
  EXPECT_EQ(snapshot->recent_events(2).seq(), 6);
  EXPECT_EQ(snapshot->last_event_seq(), 6);
  EXPECT_EQ(snapshot->first_error().seq(), 2);  // not 5
}

TEST(SnapshotBuilderTest, TheLogsFirstFailure_WinsOverTheFirstSeen) {
  SnapshotBuilder builder;
  proto::WatchEventsResponse events = Events(90, 95, /*failed_seq=*/92);
  events.mutable_first_failure()->set_seq(7);  // dropped from the ring long ago
  events.mutable_first_failure()->set_kind(proto::TASK_FAILED);
  builder.AddEvents(events);
  EXPECT_EQ(builder.Build(1, 0, 0)->first_error().seq(), 7);
}

TEST(SnapshotBuilderTest, NoFailure_NoFirstError) {
  SnapshotBuilder builder;
  builder.AddEvents(Events(1, 2));
  EXPECT_FALSE(builder.Build(1, 0, 0)->has_first_error());
}

}  // namespace
}  // namespace muster
