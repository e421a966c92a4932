// The agent across a lost leader (AgentConfig::leader_reconnect_timeout), on simulated time:
// the coordinator is killed and a new one, restored from the old one's task records, is handed
// to the agent through the reconnect_local_leader seam. Pending calls complete as if nothing
// happened; another leader, a refused register or the deadline fail them with Unavailable.
#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "tests/agent/actor/reconnect_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

constexpr uint64_t kLeaderIncarnation = 7;

class AgentReconnectTest : public ReconnectFixture {
 protected:
  void SetUp() override {
    leader_ = SpawnCoordinator(system_, Options(kLeaderIncarnation, /*with_state=*/false));
    Drain();
  }

  // Two tasks of job "worker"; with_state: both recorded CONNECTED with the agents'
  // incarnations (what a leader restarted from its state dir recovers).
  static CoordinatorOptions Options(uint64_t incarnation, bool with_state) {
    CoordinatorOptions options{.incarnation = incarnation};
    auto* job = options.config.add_coordinated_job_list();
    job->set_name("worker");
    job->set_num_tasks(2);
    options.config.set_heartbeat_timeout_in_ms(10'000);
    if (with_state) {
      auto recovered = std::make_shared<proto::RecoveredState>();
      recovered->mutable_leader()->set_incarnation(incarnation);
      for (int task = 0; task < 2; ++task) {
        proto::TaskRecord* record = recovered->add_tasks();
        *record->mutable_task() = MakeTask("worker", task);
        record->set_state(proto::TASKSTATE_CONNECTED);
        record->set_incarnation(100 + task);
      }
      options.recovered = std::move(recovered);
    }
    return options;
  }

  // A new coordinator, handed to reconnecting agents at their next try.
  CoordinatorActor RestartLeader(uint64_t incarnation, bool with_state) {
    leader_ = Keep(SpawnCoordinator(system_, Options(incarnation, with_state)));
    *next_leader_ = leader_;
    Drain();
    return leader_;
  }

  proto::CoordinatedTaskState LeaderState(int task) {
    proto::GetTaskStateRequest request;
    *request.add_source_task() = MakeTask("worker", task);
    return Call<proto::GetTaskStateResponse>(leader_, request)->task_state(0).state();
  }
};

TEST_F(AgentReconnectTest, ZeroTimeout_LostLeaderFailsCallsAtOnceAndCallbackOnce) {
  auto agent = Spawn(0, /*reconnect_timeout=*/0s);
  ASSERT_THAT(Connect(agent), IsOk());
  auto get = Send<proto::GetKeyValueResponse>(agent, Get("nccl/id"));
  auto barrier = Send<proto::BarrierResponse>(agent, Barrier("step"));
  KillLeader();
  ASSERT_TRUE(get->has_value());
  EXPECT_THAT(**get, StatusIs(Code::kUnavailable, HasSubstr("lost the connection")));
  ASSERT_TRUE(barrier->has_value());
  EXPECT_THAT(**barrier, StatusIs(Code::kUnavailable, HasSubstr("lost the connection")));
  AgentStatus status = StatusOf(agent);
  EXPECT_EQ(status.state, AgentState::kError);
  EXPECT_FALSE(status.reconnecting);
  ASSERT_EQ(errors_->size(), 1u);
  EXPECT_THAT(errors_->front(), StatusIs(Code::kUnavailable, HasSubstr("/job:worker/task:0")));
}

TEST_F(AgentReconnectTest, LeaderRestartsWithState_BlockedGetAndBarrierComplete) {
  auto a0 = Spawn(0);
  auto a1 = Spawn(1);
  ASSERT_THAT(Connect(a0), IsOk());
  ASSERT_THAT(Connect(a1), IsOk());
  auto get = Send<proto::GetKeyValueResponse>(a0, Get("nccl/id"));
  auto barrier = Send<proto::BarrierResponse>(a0, Barrier("step"));
  KillLeader();
  // The old leader's directory and barrier answer as they stop: ignored, the calls wait.
  EXPECT_FALSE(get->has_value());
  EXPECT_FALSE(barrier->has_value());
  AgentStatus status = StatusOf(a0);
  EXPECT_EQ(status.state, AgentState::kRunning);
  EXPECT_TRUE(status.reconnecting);
  AdvanceTime(5s);  // no leader yet: the agents keep trying
  RestartLeader(kLeaderIncarnation, /*with_state=*/true);
  AdvanceTime(1s);
  EXPECT_FALSE(StatusOf(a0).reconnecting);
  EXPECT_FALSE(StatusOf(a1).reconnecting);
  EXPECT_EQ(LeaderState(0), proto::TASKSTATE_CONNECTED);
  EXPECT_FALSE(get->has_value());
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, Insert("nccl/id", "abc")), IsOk());
  ASSERT_TRUE(get->has_value());
  ASSERT_THAT(**get, IsOk());
  EXPECT_EQ((**get)->kv().value(), "abc");
  EXPECT_FALSE(barrier->has_value());
  auto other = Call<proto::BarrierResponse>(a1, Barrier("step"));
  ASSERT_THAT(other, IsOk());
  EXPECT_EQ(other->counter(), 0);
  ASSERT_TRUE(barrier->has_value());
  ASSERT_THAT(**barrier, IsOk());
  EXPECT_EQ((**barrier)->counter(), 0);
  for (int i = 0; i < 6; ++i) AdvanceTime(5s);  // heartbeats reach the new leader
  EXPECT_EQ(LeaderState(0), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(LeaderState(1), proto::TASKSTATE_CONNECTED);
  EXPECT_TRUE(errors_->empty());
}

TEST_F(AgentReconnectTest, CallsMadeWhileReconnecting_SentOnceTheLeaderIsBack) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  KillLeader();
  auto put = Send<proto::InsertKeyValueResponse>(a0, Insert("ckpt/step", "42"));
  EXPECT_FALSE(put->has_value());
  RestartLeader(kLeaderIncarnation, /*with_state=*/true);
  AdvanceTime(1s);
  ASSERT_TRUE(put->has_value());
  EXPECT_THAT(**put, IsOk());
  proto::TryGetKeyValueRequest read;
  read.set_key("ckpt/step");
  auto value = Call<proto::TryGetKeyValueResponse>(leader_, read);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(value->kv().value(), "42");
  EXPECT_TRUE(errors_->empty());
}

TEST_F(AgentReconnectTest, LeaderBackWithAnotherIncarnation_CallsUnavailableAndCallbackOnce) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  auto get = Send<proto::GetKeyValueResponse>(a0, Get("nccl/id"));
  KillLeader();
  RestartLeader(kLeaderIncarnation + 1, /*with_state=*/true);
  AdvanceTime(1s);
  ASSERT_TRUE(get->has_value());
  EXPECT_THAT(**get, StatusIs(Code::kUnavailable, HasSubstr("came back without the state")));
  AgentStatus status = StatusOf(a0);
  EXPECT_EQ(status.state, AgentState::kError);
  EXPECT_FALSE(status.reconnecting);
  ASSERT_EQ(errors_->size(), 1u);
  EXPECT_THAT(errors_->front(), StatusIs(Code::kUnavailable, HasSubstr("leader incarnation 8")));
}

TEST_F(AgentReconnectTest, LeaderBackWithoutTheTask_RegisterRefusedCallsUnavailable) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  auto get = Send<proto::GetKeyValueResponse>(a0, Get("nccl/id"));
  KillLeader();
  RestartLeader(kLeaderIncarnation, /*with_state=*/false);  // no --state-dir
  AdvanceTime(1s);
  ASSERT_TRUE(get->has_value());
  EXPECT_THAT(**get, StatusIs(Code::kUnavailable, HasSubstr("refused to take back task")));
  EXPECT_THAT(**get, StatusIs(Code::kUnavailable, HasSubstr("FAILED_PRECONDITION")));
  EXPECT_EQ(StatusOf(a0).state, AgentState::kError);
  ASSERT_EQ(errors_->size(), 1u);
  EXPECT_THAT(errors_->front(), StatusIs(Code::kUnavailable, HasSubstr("/job:worker/task:0")));
}

TEST_F(AgentReconnectTest, NoLeaderWithinTimeout_UnavailableAfterExactlyTheTimeout) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  auto get = Send<proto::GetKeyValueResponse>(a0, Get("nccl/id"));
  KillLeader();
  AdvanceTime(30s - 1ms);
  EXPECT_FALSE(get->has_value());
  EXPECT_TRUE(StatusOf(a0).reconnecting);
  EXPECT_TRUE(errors_->empty());
  AdvanceTime(1ms);
  ASSERT_TRUE(get->has_value());
  EXPECT_THAT(**get, StatusIs(Code::kUnavailable, HasSubstr("did not come back within 30s "
                                                            "(leader_reconnect_timeout)")));
  EXPECT_THAT(**get, StatusIs(Code::kUnavailable, HasSubstr("/job:worker/task:0")));
  AgentStatus status = StatusOf(a0);
  EXPECT_EQ(status.state, AgentState::kError);
  EXPECT_FALSE(status.reconnecting);
  ASSERT_EQ(errors_->size(), 1u);
  RestartLeader(kLeaderIncarnation, /*with_state=*/true);  // too late: nothing happens
  AdvanceTime(5s);
  EXPECT_EQ(errors_->size(), 1u);
}

TEST_F(AgentReconnectTest, ShutdownWhileReconnecting_BlockedCallsCancelledNoCallback) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  auto get = Send<proto::GetKeyValueResponse>(a0, Get("nccl/id"));
  KillLeader();
  EXPECT_THAT(Call<proto::ShutdownTaskResponse>(a0, proto::ShutdownTaskRequest{}), IsOk());
  ASSERT_TRUE(get->has_value());
  EXPECT_THAT(**get, StatusIs(Code::kCancelled, HasSubstr("shutting down")));
  AgentStatus status = StatusOf(a0);
  EXPECT_EQ(status.state, AgentState::kDisconnected);
  EXPECT_FALSE(status.reconnecting);
  AdvanceTime(31s);  // the deadline of the ended reconnect fires nothing
  EXPECT_TRUE(errors_->empty());
}

}  // namespace
}  // namespace muster::testing
