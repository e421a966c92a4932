// The agent's own call deadlines (net/agent/calls/call_deadlines.h): a call the leader does not
// answer fails with DeadlineExceeded exactly rpc_timeout after it was sent, calls answered in time
// never do, and a call held while the leader is away waits for its re-send instead of expiring.
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/agent/actor/reconnect_fixture.h"
#include "tests/testing/recording_coordinator.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using namespace std::chrono_literals;
using Code = absl::StatusCode;

class AgentDeadlineTest : public ReconnectFixture {
 protected:
  void SetUp() override {
    recorder_->hold_inserts = true;
    leader_ = Keep(SpawnRecordingCoordinator(system_, recorder_));
  }

  std::shared_ptr<RecordingCoordinator> recorder_ = std::make_shared<RecordingCoordinator>();
};

TEST_F(AgentDeadlineTest, UnansweredCall_DeadlineExceededAtRpcTimeoutNotBefore) {
  auto a0 = Spawn(0);  // rpc_timeout: 30 s (AgentConfig's default)
  ASSERT_THAT(Connect(a0), IsOk());
  auto held = Send<proto::InsertKeyValueResponse>(a0, Insert("a", "1"));
  AdvanceTime(29s);
  EXPECT_FALSE(held->has_value());
  AdvanceTime(1s);
  ASSERT_TRUE(held->has_value());
  EXPECT_THAT(**held, StatusIs(Code::kDeadlineExceeded));
  // The agent goes on: a call answered at once is unaffected, and no error was reported.
  proto::IncrementKeyValueRequest increment;
  increment.set_key("n");
  increment.set_increment(1);
  EXPECT_THAT(Call<proto::IncrementKeyValueResponse>(a0, increment), IsOk());
  EXPECT_EQ(StatusOf(a0).state, AgentState::kRunning);
  EXPECT_TRUE(errors_->empty());
}

TEST_F(AgentDeadlineTest, CallsSentLater_EachGetsItsOwnDeadline) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  auto first = Send<proto::InsertKeyValueResponse>(a0, Insert("a", "1"));
  AdvanceTime(10s);
  auto second = Send<proto::InsertKeyValueResponse>(a0, Insert("b", "2"));
  AdvanceTime(20s);
  ASSERT_TRUE(first->has_value());
  EXPECT_THAT(**first, StatusIs(Code::kDeadlineExceeded));
  EXPECT_FALSE(second->has_value());
  AdvanceTime(10s);
  ASSERT_TRUE(second->has_value());
  EXPECT_THAT(**second, StatusIs(Code::kDeadlineExceeded));
}

TEST_F(AgentDeadlineTest, AnsweredCalls_NeverExpire) {
  recorder_->hold_inserts = false;
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(Call<proto::InsertKeyValueResponse>(a0, Insert("k", "v")), IsOk());
  }
  AdvanceTime(60s);
  EXPECT_EQ(StatusOf(a0).state, AgentState::kRunning);
  EXPECT_TRUE(errors_->empty());
}

}  // namespace
}  // namespace muster::testing
