// CoordinatorRecords: the batches the coordinator persists (none without a writer), and the
// leader record's starts.
#include "muster/actors/durability/coordinator_records.h"

#include <gtest/gtest.h>

#include "muster/actors/durability/state_store.h"
#include "muster/messages/task_name.h"
#include "tests/testing/deterministic_fixture.h"

namespace muster {
namespace {

class CoordinatorRecordsTest : public testing::DeterministicTest {
 protected:
  StateWriterActor Writer() {
    return caf::actor_cast<StateWriterActor>(
        Keep(system_.spawn([]() -> caf::behavior { return {[](int) {}}; })));
  }
  static proto::LeaderRecord LeaderIn(const StateBatch& batch) {
    proto::LeaderRecord leader;
    for (const auto& [key, value] : batch.ops) {
      if (key == LeaderStateKey() && value) leader.ParseFromString(*value);
    }
    return leader;
  }
};

TEST_F(CoordinatorRecordsTest, WithoutWriter_EveryBatchIsEmpty) {
  CoordinatorRecords records;
  EXPECT_FALSE(records.enabled());
  EXPECT_TRUE(records.Started(1000, 0, 0).empty());
  proto::CoordinatedTaskStateInfo info;
  *info.mutable_task() = MakeTask("worker", 0);
  EXPECT_TRUE(records.TaskChanged(info, 1, 2, 3).empty());
  EXPECT_TRUE(records.NewRound({"b"}, 2, 3).empty());
}

TEST_F(CoordinatorRecordsTest, TaskChanged_PutsTheTaskAndTheLeader) {
  CoordinatorRecords records(Writer(), 77);
  proto::CoordinatedTaskStateInfo info;
  *info.mutable_task() = MakeTask("worker", 3);
  info.set_state(proto::TASKSTATE_CONNECTED);
  info.set_incarnation(9);
  StateBatch batch = records.TaskChanged(info, 4, 12, 2);
  ASSERT_EQ(batch.ops.size(), 2u);
  EXPECT_EQ(batch.ops[0].first, TaskStateKey(TaskName(MakeTask("worker", 3))));
  proto::TaskRecord task;
  ASSERT_TRUE(task.ParseFromString(*batch.ops[0].second));
  EXPECT_EQ(task.state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(task.incarnation(), 9u);
  EXPECT_EQ(task.generation(), 4);
  proto::LeaderRecord leader = LeaderIn(batch);
  EXPECT_EQ(leader.format(), kStateFormat);
  EXPECT_EQ(leader.incarnation(), 77u);
  EXPECT_EQ(leader.version(), 12);
  EXPECT_EQ(leader.round(), 2);
}

TEST_F(CoordinatorRecordsTest, NewRound_DeletesTheBarrierResults) {
  CoordinatorRecords records(Writer(), 1);
  StateBatch batch = records.NewRound({"a", "b"}, 5, 6);
  ASSERT_EQ(batch.ops.size(), 3u);
  EXPECT_EQ(batch.ops[0].first, BarrierStateKey("a"));
  EXPECT_FALSE(batch.ops[0].second.has_value());
  EXPECT_EQ(batch.ops[1].first, BarrierStateKey("b"));
  EXPECT_EQ(LeaderIn(batch).round(), 6);
}

TEST_F(CoordinatorRecordsTest, Started_CountsStartsAndKeepsTheLast64) {
  proto::LeaderRecord recovered;
  recovered.set_starts(70);
  for (int i = 0; i < CoordinatorRecords::kMaxStarts; ++i) recovered.add_started_unix_ms(i);
  CoordinatorRecords records(Writer(), 2, recovered);
  proto::LeaderRecord leader = LeaderIn(records.Started(5000, 3, 1));
  EXPECT_EQ(leader.starts(), 71);
  ASSERT_EQ(leader.started_unix_ms_size(), CoordinatorRecords::kMaxStarts);
  EXPECT_EQ(leader.started_unix_ms(0), 1);
  EXPECT_EQ(leader.started_unix_ms(CoordinatorRecords::kMaxStarts - 1), 5000);
  EXPECT_EQ(records.leader().starts(), 71);
}

}  // namespace
}  // namespace muster
