// How an agent ends, with real leader and worker processes: an agent destroyed without
// shutdown answers its pending get and barrier with Cancelled, once each; Shutdown() of an
// agent in ERROR (after a failed shutdown barrier) returns FailedPrecondition, through the
// Agent and through the XLA client.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/e2e/e2e_fixture.h"

namespace muster {
namespace {

using ::muster::testing::E2eTest;
using ::muster::testing::kBound;
using ::testing::HasSubstr;
using ::testing::Not;

class AgentTeardownE2eTest : public E2eTest {};

// Task 0 waits for a key nobody writes and at a barrier task 1 never reaches, then destroys its
// agent with shutdown_on_destruction = false.
TEST_F(AgentTeardownE2eTest, DestroyedWithoutShutdown_PendingGetAndBarrierCancelledOnce) {
  StartLeader({"--jobs=worker=2"});
  auto* peer = StartWorker(1, "wait_error");
  ASSERT_TRUE(peer->WaitForLine("EVENT ready", kBound).ok());
  auto* dropping = StartWorker(0, "drop_pending", {"--wait_ms=5000"});
  ExpectExit(dropping, 0);
  const std::string& out = dropping->output();
  EXPECT_THAT(out, HasSubstr("EVENT waiting"));
  EXPECT_THAT(out, HasSubstr("EVENT get code=CANCELLED message=cancelled: the agent of "
                             "/job:worker/task:0 was destroyed while the call waited"));
  EXPECT_THAT(out, HasSubstr("EVENT barrier code=CANCELLED message=cancelled: the agent of "
                             "/job:worker/task:0 was destroyed while the call waited"));
  EXPECT_THAT(out, HasSubstr("EVENT answers get=1 barrier=1"));
  EXPECT_THAT(out, Not(HasSubstr("actor system is shutting down")));
  ExpectExit(peer, 0);  // the leader told it that task 0 was lost
  EXPECT_THAT(peer->output(), HasSubstr("EVENT error"));
}

// Three tasks, a 1 s shutdown barrier: task 2 shuts down alone and the barrier fails; task 0
// is told (its error callback), then its Shutdown() returns FailedPrecondition.
TEST_F(AgentTeardownE2eTest, ShutdownBarrierFailed_ShutdownInErrorFailedPrecondition) {
  StartLeader({"--jobs=worker=3", "--shutdown_barrier_timeout_ms=1000"});
  auto* t0 = StartWorker(0, "error_shutdown");
  auto* t1 = StartWorker(1, "wait_error");
  ASSERT_TRUE(t0->WaitForLine("EVENT ready", kBound).ok());
  ASSERT_TRUE(t1->WaitForLine("EVENT ready", kBound).ok());
  auto* t2 = StartWorker(2, "shutdown");
  ExpectExit(t2, 0);
  EXPECT_THAT(t2->output(), HasSubstr("EVENT shutdown code=INTERNAL message=Failed to disconnect "
                                      "from the leader: Shutdown barrier has failed"));
  ExpectExit(t0, 0);
  const std::string& out = t0->output();
  EXPECT_THAT(out, HasSubstr("EVENT error"));
  EXPECT_THAT(out, HasSubstr("EVENT shutdown code=FAILED_PRECONDITION message=Shutdown() of "
                             "/job:worker/task:0 was called while its agent is in ERROR state, "
                             "implying that distributed execution failed: "));
  EXPECT_THAT(out, HasSubstr("Shutdown barrier has failed: 2 task(s) did not reach it"));
  EXPECT_THAT(out, HasSubstr("The agent is now DISCONNECTED and did not contact the leader; end "
                             "this process with a failure"));
  EXPECT_THAT(out, Not(HasSubstr("code=INTERNAL message=Failed to disconnect")));
  ExpectExit(t1, 0);
}

TEST_F(AgentTeardownE2eTest, ShutdownBarrierFailed_XlaClientShutdownInErrorFailedPrecondition) {
  StartLeader({"--jobs=xla=3", "--shutdown_barrier_timeout_ms=1000"});
  auto* n0 = StartWorker(0, "xla_error_shutdown", {"--job=xla"});
  auto* n1 = StartWorker(1, "xla_error_shutdown", {"--job=xla"});
  auto* n2 = StartWorker(2, "xla_shutdown", {"--job=xla"});
  ExpectExit(n2, 0);
  EXPECT_THAT(n2->output(), HasSubstr("EVENT xla shutdown code=INTERNAL"));
  for (auto* node : {n0, n1}) {
    ExpectExit(node, 0);
    EXPECT_THAT(node->output(), HasSubstr("EVENT xla error code=INTERNAL"));
    EXPECT_THAT(node->output(), HasSubstr("EVENT xla shutdown code=FAILED_PRECONDITION"));
    EXPECT_THAT(node->output(), HasSubstr("did not contact the leader"));
  }
  EXPECT_THAT(n0->output(), HasSubstr("Shutdown() of /job:xla/task:0 was called while its agent "
                                      "is in ERROR state"));
}

}  // namespace
}  // namespace muster
