// PreemptionSignalHandler over real TCP on 127.0.0.1: a SIGTERM raised in the worker's process
// becomes a preemption notice that the leader sends every task, instead of ending the process.
#include <csignal>
#include <memory>
#include <optional>

#include <absl/synchronization/mutex.h>
#include <absl/synchronization/notification.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/task_name.h"
#include "muster/net/agent/per_process/preemption_signal.h"
#include "muster/net/leader/leader.h"
#include "tests/net/two_nodes_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;

class PreemptionSignalTest : public testing::TwoNodesTest {
 protected:
  void SetUp() override {
    CoordinatorOptions options;
    auto* job = options.config.add_coordinated_job_list();
    job->set_name("worker");
    job->set_num_tasks(1);
    auto leader = Leader::Start(leader_system_, std::move(options));
    ASSERT_TRUE(leader.ok()) << leader.status();
    leader_ = *std::move(leader);
    AgentOptions agent_options{.leader = leader_->address(), .task_id = 0};
    agent_options.on_preemption = [this](const proto::PreemptionNotice& notice) {
      notice_ = notice;
      noticed_.Notify();
    };
    auto agent = Agent::Create(worker_system_, agent_options, [](const absl::Status&) {});
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
    ASSERT_THAT(agent_->Connect(), IsOk());
  }
  void TearDown() override { agent_.reset(); }

  std::unique_ptr<Agent> agent_;
  absl::Notification noticed_;
  std::optional<proto::PreemptionNotice> notice_;  // written before noticed_ is notified
};

TEST_F(PreemptionSignalTest, Sigterm_BecomesAPreemptionNoticeDueAfterTheGrace) {
  auto handler = PreemptionSignalHandler::Install(*agent_, absl::Seconds(45));
  ASSERT_THAT(handler.status(), IsOk());
  absl::Time before = absl::Now();
  ASSERT_EQ(std::raise(SIGTERM), 0);  // the process goes on: the handler took it
  ASSERT_TRUE(noticed_.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(notice_->reason(), "signal SIGTERM");
  EXPECT_EQ(TaskName(notice_->notified_by()), "/job:worker/task:0");
  int64_t due = notice_->deadline_unix_ms() - absl::ToUnixMillis(before);
  EXPECT_GE(due, 44'000);
  EXPECT_LE(due, 46'000);
  auto sync = agent_->ReachedSyncPoint(0);  // no step reported before: the sync step is 0
  ASSERT_THAT(sync.status(), IsOk());
  EXPECT_TRUE(*sync);
}

TEST_F(PreemptionSignalTest, SecondHelper_RefusedAndTheFirstRestoresTheOldHandler) {
  struct sigaction before {};
  sigaction(SIGUSR1, nullptr, &before);
  {
    auto handler = PreemptionSignalHandler::Install(*agent_, absl::Seconds(1), {SIGUSR1});
    ASSERT_THAT(handler.status(), IsOk());
    EXPECT_THAT(PreemptionSignalHandler::Install(*agent_).status(),
                StatusIs(absl::StatusCode::kFailedPrecondition));
  }
  struct sigaction after {};
  sigaction(SIGUSR1, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  EXPECT_THAT(PreemptionSignalHandler::Install(*agent_, absl::Seconds(1), {SIGKILL}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_FALSE(noticed_.HasBeenNotified());
}

}  // namespace
}  // namespace muster
