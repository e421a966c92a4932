// ClusterView: the configured tasks, found by position (no name built), and their states.
#include "muster/actors/cluster/cluster_view.h"

#include <gtest/gtest.h>

#include "muster/messages/task_name.h"

namespace muster {
namespace {

proto::CoordinationServiceConfig Jobs(std::initializer_list<std::pair<const char*, int>> jobs) {
  proto::CoordinationServiceConfig config;
  for (const auto& [name, tasks] : jobs) {
    auto* job = config.add_coordinated_job_list();
    job->set_name(name);
    job->set_num_tasks(tasks);
  }
  return config;
}

TEST(ClusterViewTest, IndexOf_IsThePositionInTasksOrderedByJobThenId) {
  ClusterView view(Jobs({{"worker", 3}, {"ps", 2}}));
  ASSERT_EQ(view.tasks().size(), 5u);
  for (uint32_t i = 0; i < view.tasks().size(); ++i) {
    EXPECT_EQ(view.IndexOf(view.tasks()[i]), i) << TaskName(view.tasks()[i]);
  }
  EXPECT_EQ(view.IndexOf(MakeTask("ps", 1)), 1u);
  EXPECT_EQ(view.IndexOf(MakeTask("worker", 0)), 2u);
  EXPECT_EQ(view.IndexOf(MakeTask("worker", 2)), 4u);
}

TEST(ClusterViewTest, IndexOf_TaskNotConfigured_Nullopt) {
  ClusterView view(Jobs({{"worker", 3}, {"empty", 0}}));
  EXPECT_EQ(view.IndexOf(MakeTask("worker", 3)), std::nullopt);
  EXPECT_EQ(view.IndexOf(MakeTask("worker", -1)), std::nullopt);
  EXPECT_EQ(view.IndexOf(MakeTask("empty", 0)), std::nullopt);
  EXPECT_EQ(view.IndexOf(MakeTask("ps", 0)), std::nullopt);
  EXPECT_EQ(view.IndexOf(MakeTask("", 0)), std::nullopt);
  EXPECT_FALSE(view.IsKnown(MakeTask("worker", 3)));
  EXPECT_EQ(view.Find(MakeTask("worker", 3)), nullptr);
  EXPECT_FALSE(view.HasJob("empty"));
  EXPECT_TRUE(view.HasJob("worker"));
}

TEST(ClusterViewTest, JobGivenTwice_ItsTasksOnceEach) {
  ClusterView view(Jobs({{"worker", 2}, {"worker", 3}}));
  ASSERT_EQ(view.tasks().size(), 3u);
  EXPECT_EQ(view.IndexOf(MakeTask("worker", 2)), 2u);
}

TEST(ClusterViewTest, Update_ReplacesOnlyThatTasksState) {
  ClusterView view(Jobs({{"worker", 2}}));
  proto::CoordinatedTaskStateInfo info;
  *info.mutable_task() = MakeTask("worker", 1);
  info.set_state(proto::TASKSTATE_CONNECTED);
  info.set_incarnation(9);
  ASSERT_TRUE(view.Update(info));
  EXPECT_EQ(view.Find(MakeTask("worker", 1))->incarnation(), 9u);
  EXPECT_EQ(view.Find(MakeTask("worker", 0))->state(), proto::TASKSTATE_DISCONNECTED);
  *info.mutable_task() = MakeTask("worker", 2);
  EXPECT_FALSE(view.Update(info));
}

// Registering with the recoverable flag marks that configured task only; a task not in the
// configuration is not kept (a peer could otherwise grow the view without bound).
TEST(ClusterViewTest, SetRecoverable_MarksConfiguredTasksOnly) {
  auto config = Jobs({{"worker", 2}, {"ps", 1}});
  config.add_recoverable_jobs("ps");
  ClusterView view(config);
  EXPECT_TRUE(view.IsRecoverable(MakeTask("ps", 0)));
  EXPECT_FALSE(view.IsRecoverable(MakeTask("worker", 1)));
  view.SetRecoverable(MakeTask("worker", 1), true);
  view.SetRecoverable(MakeTask("worker", 7), true);
  EXPECT_TRUE(view.IsRecoverable(MakeTask("worker", 1)));
  EXPECT_FALSE(view.IsRecoverable(MakeTask("worker", 0)));
  EXPECT_FALSE(view.IsRecoverable(MakeTask("worker", 7)));
  view.SetRecoverable(MakeTask("worker", 1), false);
  EXPECT_FALSE(view.IsRecoverable(MakeTask("worker", 1)));
}

}  // namespace
}  // namespace muster
