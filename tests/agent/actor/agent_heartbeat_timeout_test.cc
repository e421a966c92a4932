// The heartbeat timeout an agent uses: the leader's (from its register response) when the agent
// has none of its own, the agent's own when it is not longer than the leader's, and a refused
// Connect() when it is. Against a recording stand-in leader, on simulated time.
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/task_name.h"
#include "muster/net/agent/actor/agent_actor.h"
#include "tests/testing/deterministic_fixture.h"
#include "tests/testing/recording_coordinator.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

class AgentHeartbeatTimeoutTest : public DeterministicTest {
 protected:
  AgentControlActor Spawn(caf::timespan heartbeat_timeout, int64_t leaders_ms) {
    log_->heartbeat_timeout_ms = leaders_ms;
    AgentConfig config;
    config.task = MakeTask("worker", 0);
    config.incarnation = 100;
    config.local_leader = Keep(SpawnRecordingCoordinator(system_, log_));
    config.heartbeat_timeout = heartbeat_timeout;
    return Keep(SpawnAgentActor(system_, config));
  }

  absl::Status Connect(const AgentControlActor& agent) {
    return Call<proto::RegisterTaskResponse>(agent, caf::connect_atom::value).status();
  }

  std::shared_ptr<RecordingCoordinator> log_ = std::make_shared<RecordingCoordinator>();
};

TEST_F(AgentHeartbeatTimeoutTest, Unset_BeatsEveryHalfOfTheLeadersTimeout) {
  auto agent = Spawn(caf::timespan{0}, 2'000);
  ASSERT_THAT(Connect(agent), IsOk());
  EXPECT_EQ(log_->heartbeats, 0);
  AdvanceTime(999ms);
  EXPECT_EQ(log_->heartbeats, 0);
  AdvanceTime(1ms);
  EXPECT_EQ(log_->heartbeats, 1);
  AdvanceTime(1s);
  EXPECT_EQ(log_->heartbeats, 2);
  EXPECT_EQ(Call<AgentStatus>(agent, agent_state_atom::value)->state, AgentState::kRunning);
}

TEST_F(AgentHeartbeatTimeoutTest, UnsetAndALeaderThatSendsNone_BeatsEveryFiveSeconds) {
  auto agent = Spawn(caf::timespan{0}, 0);
  ASSERT_THAT(Connect(agent), IsOk());
  AdvanceTime(4'999ms);
  EXPECT_EQ(log_->heartbeats, 0);
  AdvanceTime(1ms);
  EXPECT_EQ(log_->heartbeats, 1);
}

TEST_F(AgentHeartbeatTimeoutTest, ShorterThanTheLeaders_KeepsItsOwn) {
  auto agent = Spawn(1s, 2'000);
  ASSERT_THAT(Connect(agent), IsOk());
  AdvanceTime(500ms);
  EXPECT_EQ(log_->heartbeats, 1);
  AdvanceTime(500ms);
  EXPECT_EQ(log_->heartbeats, 2);
  EXPECT_TRUE(log_->reports.empty());
}

TEST_F(AgentHeartbeatTimeoutTest, LongerThanTheLeaders_ConnectFailsNamingBoth) {
  auto agent = Spawn(10s, 2'000);
  EXPECT_THAT(
      Connect(agent),
      StatusIs(Code::kFailedPrecondition,
               AllOf(HasSubstr("/job:worker/task:0"), HasSubstr("10000 ms"), HasSubstr("2000 ms"),
                     HasSubstr("heartbeat_timeout unset"), HasSubstr("--heartbeat-timeout"))));
  EXPECT_EQ(Call<AgentStatus>(agent, agent_state_atom::value)->state, AgentState::kError);
  // The leader, which registered the task, fails it at once with the reason.
  ASSERT_EQ(log_->reports.size(), 1u);
  EXPECT_EQ(log_->reports[0].error_code(), static_cast<int>(Code::kFailedPrecondition));
  EXPECT_THAT(log_->reports[0].error_message(), HasSubstr("10000 ms"));
  AdvanceTime(30s);
  EXPECT_EQ(log_->heartbeats, 0);
}

}  // namespace
}  // namespace muster::testing
