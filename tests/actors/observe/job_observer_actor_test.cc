// The job observer on simulated time: a snapshot lists every configured task with its state,
// the open barriers and the directories' sizes; a fresh snapshot is served again within
// max_age, a new one is taken after it; and the observer ends with its coordinator.
#include "muster/actors/observe/job_observer_actor.h"

#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/actors/cluster/cluster_view.h"
#include "tests/actors/leader_fixture.h"

namespace muster::testing {
namespace {

class JobObserverTest : public LeaderTest {
 protected:
  JobObserverActor Observer(const proto::CoordinationServiceConfig& config) {
    (void)config;
    return Keep(SpawnJobObserver(system_, leader_,
                                 {.leader_incarnation = 77,
                                  .max_age = std::chrono::milliseconds(500),
                                  .start_unix_ms = 1'000'000}));
  }

  JobSnapshotPtr Snapshot(const JobObserverActor& observer) {
    auto reply = Send<JobSnapshotPtr>(observer, snapshot_atom::value);
    EXPECT_TRUE(reply->has_value());
    if (!reply->has_value() || !(*reply)->ok()) return nullptr;
    return ***reply;
  }

  void Insert(const std::string& key) {
    proto::InsertKeyValueRequest insert;
    insert.mutable_kv()->set_key(key);
    insert.mutable_kv()->set_value("v");
    ASSERT_TRUE(Call<proto::InsertKeyValueResponse>(leader_, insert).ok());
  }
};

TEST_F(JobObserverTest, Snapshot_ListsTasksBarriersAndDirectories) {
  auto config = Config(2);
  Spawn(config);
  Reports reports;
  ASSERT_TRUE(Register("worker", 0, 11, Agent(&reports)).ok());
  Insert("config/lr");
  Insert("config/batch");
  proto::BarrierRequest barrier;
  barrier.set_barrier_id("init");
  barrier.set_barrier_timeout_in_ms(60'000);
  *barrier.mutable_source_task() = MakeTask("worker", 0);
  *barrier.add_tasks() = MakeTask("worker", 0);
  *barrier.add_tasks() = MakeTask("worker", 1);
  auto pending = Send<proto::BarrierResponse>(leader_, barrier);
  ASSERT_FALSE(pending->has_value());  // waits for task 1
  AdvanceTime(std::chrono::milliseconds(250));

  JobObserverActor observer = Observer(config);
  JobSnapshotPtr snapshot = Snapshot(observer);
  ASSERT_NE(snapshot, nullptr);
  EXPECT_EQ(snapshot->leader_incarnation(), 77u);
  // Every configured task in the cluster's order: ps 0, worker 0, worker 1.
  const proto::TaskColumns& tasks = snapshot->tasks();
  EXPECT_THAT(tasks.job_names(), ::testing::ElementsAre("ps", "worker"));
  EXPECT_THAT(tasks.job_sizes(), ::testing::ElementsAre(1, 2));
  ASSERT_EQ(tasks.states().size(), 3u);
  EXPECT_EQ(tasks.states()[1], proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(tasks.incarnations(1), 11u);
  EXPECT_EQ(tasks.connected_age_ms(1), 250);
  EXPECT_EQ(tasks.states()[2], proto::TASKSTATE_DISCONNECTED);
  EXPECT_EQ(tasks.connected_age_ms(2), -1);
  EXPECT_EQ(tasks.steps(1), std::numeric_limits<int64_t>::min());
  EXPECT_GE(snapshot->version(), 1);  // worker 0's registration changed a task state
  ASSERT_EQ(snapshot->barriers_size(), 1);
  EXPECT_EQ(snapshot->barriers(0).barrier_id(), "init");
  EXPECT_EQ(snapshot->barriers(0).arrived(), 1);
  ASSERT_EQ(snapshot->barriers(0).waiting_for_size(), 1);
  EXPECT_EQ(snapshot->barriers(0).waiting_for(0).task_id(), 1);
  ASSERT_EQ(snapshot->kv_directories_size(), 1);
  EXPECT_EQ(snapshot->kv_directories(0).directory(), "config");
  EXPECT_EQ(snapshot->kv_directories(0).keys(), 2);
  // "config/lr" + "v" and "config/batch" + "v".
  EXPECT_EQ(snapshot->kv_directories(0).value_bytes(), 9 + 1 + 12 + 1);
  EXPECT_EQ(snapshot->taken_unix_ms(), 1'000'000);
}

TEST_F(JobObserverTest, FreshSnapshot_IsServedAgain_ANewOneAfterMaxAge) {
  auto config = Config(1);
  Spawn(config);
  JobObserverActor observer = Observer(config);
  JobSnapshotPtr first = Snapshot(observer);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->kv_directories_size(), 0);
  Insert("config/a");
  AdvanceTime(std::chrono::milliseconds(499));
  EXPECT_EQ(Snapshot(observer), first);  // the same object: nothing asked of the coordinator
  AdvanceTime(std::chrono::milliseconds(1));
  JobSnapshotPtr second = Snapshot(observer);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(second, first);
  ASSERT_EQ(second->kv_directories_size(), 1);
  EXPECT_EQ(second->uptime_ms(), 500);
}

TEST_F(JobObserverTest, ConcurrentRequests_ShareOneSnapshot) {
  auto config = Config(1);
  Spawn(config);
  JobObserverActor observer = Observer(config);
  // Both requests reach the observer before the coordinator answers its first question.
  auto a = std::make_shared<JobSnapshotPtr>();
  auto b = std::make_shared<JobSnapshotPtr>();
  for (auto slot : {a, b}) {
    Keep(system_.spawn([=](caf::event_based_actor* self) {
      self->request(observer, caf::infinite, snapshot_atom::value)
          .then([slot](JobSnapshotPtr& snapshot) { *slot = snapshot; });
    }));
  }
  Drain();
  ASSERT_NE(*a, nullptr);
  EXPECT_EQ(*a, *b);
}

TEST_F(JobObserverTest, EndsWithItsCoordinator) {
  auto config = Config(1);
  CoordinatorActor coordinator = Spawn(config);
  JobObserverActor observer = SpawnJobObserver(system_, coordinator, {});
  auto down = std::make_shared<bool>(false);
  Keep(system_.spawn([=](caf::event_based_actor* self) -> caf::behavior {
    self->monitor(observer);
    self->set_down_handler([down](caf::down_msg&) { *down = true; });
    return {[](int) {}};  // stays alive to hear of the observer
  }));
  Drain();
  caf::anon_send_exit(coordinator, caf::exit_reason::user_shutdown);
  Drain();
  EXPECT_TRUE(*down);
}

}  // namespace
}  // namespace muster::testing
