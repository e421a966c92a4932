// The embedding API with real leader and worker processes: destroying an agent without
// shutting down (the task is lost, or rejoins as a new incarnation), and the XLA client's
// KeyValueTryGet and GetLiveNodes.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/e2e/e2e_fixture.h"

namespace muster {
namespace {

using ::muster::testing::E2eTest;
using ::muster::testing::kBound;
using ::muster::testing::Subprocess;
using ::testing::HasSubstr;
using ::testing::Not;

class AgentApiE2eTest : public E2eTest {};

// Task 0 destroys its connected agent with shutdown_on_destruction = false while its process
// (and its connection to the leader) lives on: the leader fails the task as lost and, under
// fate sharing, tells task 1 before task 0's process exits.
TEST_F(AgentApiE2eTest, DestroyedWithoutShutdown_TaskLostPeerToldWhileProcessLives) {
  StartLeader({"--jobs=worker=2"});
  auto* peer = StartWorker(1, "wait_error");
  ASSERT_TRUE(peer->WaitForLine("EVENT ready", kBound).ok());
  auto* dropping = StartWorker(0, "drop_agent", {"--wait_ms=3000"});
  ASSERT_TRUE(dropping->WaitForLine("EVENT dropped", kBound).ok());
  auto error = peer->WaitForLine("EVENT error", kBound);
  ASSERT_TRUE(error.ok()) << error.status() << peer->output();
  EXPECT_THAT(*error, HasSubstr("code=UNAVAILABLE"));
  EXPECT_THAT(*error, HasSubstr("/job:worker/task:0"));
  EXPECT_THAT(dropping->output(), Not(HasSubstr("EVENT exiting")));
  ExpectExit(peer, 0);
  ExpectExit(dropping, 0);
}

// A recoverable task drops its agent and rejoins from the same process with a new incarnation;
// its peer meets it again and is never told of an error.
TEST_F(AgentApiE2eTest, DestroyedWithoutShutdown_RecoverableTaskRejoinsAsNewIncarnation) {
  StartLeader({"--jobs=worker=2", "--recoverable_jobs=worker"});
  auto* peer = StartWorker(1, "rejoin_peer", {"--recoverable"});
  auto* task = StartWorker(0, "drop_rejoin", {"--recoverable"});
  ExpectExit(task, 0);
  ExpectExit(peer, 0);
  EXPECT_THAT(task->output(), HasSubstr("EVENT dropped"));
  EXPECT_THAT(task->output(), HasSubstr("EVENT rejoin code=OK"));
  EXPECT_THAT(task->output(), HasSubstr("EVENT new_incarnation 1"));
  EXPECT_THAT(task->output(), HasSubstr("EVENT rejoined code=OK"));
  EXPECT_THAT(task->output(), HasSubstr("EVENT shutdown code=OK"));
  EXPECT_THAT(peer->output(), HasSubstr("EVENT rejoined code=OK"));
  EXPECT_THAT(peer->output(), HasSubstr("EVENT errors_seen 0"));
}

TEST_F(AgentApiE2eTest, XlaClient_KeyValueTryGetAndLiveNodesWithIncarnations) {
  StartLeader({"--jobs=xla=2"});
  std::vector<Subprocess*> nodes = {StartWorker(0, "xla", {"--job=xla"}),
                                    StartWorker(1, "xla", {"--job=xla"})};
  for (auto* node : nodes) {
    ExpectExit(node, 0);
    const std::string& out = node->output();
    EXPECT_THAT(out, HasSubstr("EVENT xla try_get node0"));
    EXPECT_THAT(out, HasSubstr("EVENT xla try_get_missing code=NOT_FOUND"));
    EXPECT_THAT(out, HasSubstr("EVENT xla live=0+,1+, mine_matches=1"));
  }
}

}  // namespace
}  // namespace muster
