// TaskTable: slots in the view's order, task actors found again by their address, the agents
// not yet told of an error, live incarnations and the version.
#include "muster/actors/tasks/task_table.h"

#include <chrono>

#include <gtest/gtest.h>

#include "muster/messages/task_name.h"
#include "tests/testing/deterministic_fixture.h"

namespace muster {
namespace {

using namespace std::chrono_literals;

proto::CoordinationServiceConfig Jobs(int workers) {
  proto::CoordinationServiceConfig config;
  auto* job = config.add_coordinated_job_list();
  job->set_name("worker");
  job->set_num_tasks(workers);
  return config;
}

proto::CoordinatedTaskStateInfo State(int id, proto::CoordinatedTaskState state,
                                      uint64_t incarnation) {
  proto::CoordinatedTaskStateInfo info;
  *info.mutable_task() = MakeTask("worker", id);
  info.set_state(state);
  info.set_incarnation(incarnation);
  return info;
}

class TaskTableTest : public testing::DeterministicTest {
 protected:
  // A live actor handle to stand for an agent or a task actor (it is never sent anything).
  template <class Handle>
  Handle Dummy() {
    return caf::actor_cast<Handle>(
        Keep(system_.spawn([]() -> caf::behavior { return {[](int) {}}; })));
  }
  caf::actor_clock::time_point now_{std::chrono::seconds(100)};
};

TEST_F(TaskTableTest, Slots_FollowTheViewOrder) {
  TaskTable table(ClusterView(Jobs(3)));
  ASSERT_EQ(table.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(table[i].index, i);
  EXPECT_EQ(table.Find(MakeTask("worker", 2)), &table[2]);
  EXPECT_EQ(table.Find(MakeTask("worker", 3)), nullptr);
  EXPECT_EQ(table.Find(MakeTask("ps", 0)), nullptr);
  EXPECT_EQ(&table.SlotOf(MakeTask("worker", 1)), &table[1]);
}

TEST_F(TaskTableTest, TakeOwner_FindsTheSlotOfTheCurrentTaskActorOnce) {
  TaskTable table(ClusterView(Jobs(2)));
  auto first = Dummy<TaskActor>();
  auto second = Dummy<TaskActor>();
  table.SetActor(table[1], first);
  EXPECT_EQ(table[1].actor, first);
  EXPECT_EQ(table.TakeOwner(first.address()), 1u);
  EXPECT_EQ(table.TakeOwner(first.address()), std::nullopt);  // forgotten
  table.SetActor(table[1], second);
  EXPECT_EQ(table.TakeOwner(Dummy<TaskActor>().address()), std::nullopt);
  EXPECT_EQ(table.TakeOwner(second.address()), 1u);
}

TEST_F(TaskTableTest, TakeUntold_HandsEachAgentOutOnceUntilItIsReplaced) {
  TaskTable table(ClusterView(Jobs(3)));
  auto a = Dummy<AgentActor>();
  auto b = Dummy<AgentActor>();
  table.SetAgent(table[0], a);
  table.SetAgent(table[1], b);
  EXPECT_EQ(table.untold_agents(), 2);
  EXPECT_EQ(table.ConnectedAgents(), 2);
  EXPECT_EQ(table.TakeUntold(table[0]), a);
  EXPECT_FALSE(table.TakeUntold(table[0]));  // told already
  EXPECT_FALSE(table.TakeUntold(table[2]));  // not connected
  EXPECT_EQ(table.untold_agents(), 1);
  table.SetAgent(table[0], a);  // a new connection: told nothing yet
  EXPECT_EQ(table.untold_agents(), 2);
  table.SetAgent(table[1], AgentActor{});  // disconnected
  EXPECT_EQ(table.untold_agents(), 1);
  EXPECT_EQ(table.ConnectedAgents(), 1);
  table.SetAgent(table[0], AgentActor{});  // told agents leaving change nothing counted
  EXPECT_EQ(table.untold_agents(), 0);
}

TEST_F(TaskTableTest, Live_ReturnsTheIncarnationThatEnded) {
  TaskTable table(ClusterView(Jobs(1)));
  TaskSlot& slot = table[0];
  EXPECT_EQ(table.Live(slot, State(0, proto::TASKSTATE_CONNECTED, 7), now_), 0u);
  EXPECT_EQ(slot.live_incarnation, 7u);
  EXPECT_EQ(slot.connected_at, now_);
  // The same incarnation again keeps when it connected.
  EXPECT_EQ(table.Live(slot, State(0, proto::TASKSTATE_CONNECTED, 7), now_ + 1s), 0u);
  EXPECT_EQ(slot.connected_at, now_);
  // A new incarnation ends the old one.
  EXPECT_EQ(table.Live(slot, State(0, proto::TASKSTATE_CONNECTED, 8), now_ + 2s), 7u);
  EXPECT_EQ(slot.connected_at, now_ + 2s);
  EXPECT_EQ(table.Live(slot, State(0, proto::TASKSTATE_ERROR, 8), now_ + 3s), 8u);
  EXPECT_EQ(slot.live_incarnation, 0u);
  EXPECT_EQ(slot.connected_at, std::nullopt);
  EXPECT_EQ(table.Live(slot, State(0, proto::TASKSTATE_DISCONNECTED, 8), now_ + 4s), 0u);
}

TEST_F(TaskTableTest, Live_RecoveredIncarnationConnectsWhenItRegistersAgain) {
  TaskTable table(ClusterView(Jobs(1)));
  TaskSlot& slot = table[0];
  slot.live_incarnation = 5;  // recovered CONNECTED by a restarted leader
  EXPECT_EQ(table.Live(slot, State(0, proto::TASKSTATE_CONNECTED, 5), now_), 0u);
  EXPECT_EQ(slot.connected_at, now_);
}

TEST_F(TaskTableTest, Version_CountsChanges) {
  TaskTable table(ClusterView(Jobs(1)));
  EXPECT_EQ(table.version(), 0);
  table.set_version(41);
  EXPECT_EQ(table.BumpVersion(), 42);
  EXPECT_EQ(table.version(), 42);
}

}  // namespace
}  // namespace muster
