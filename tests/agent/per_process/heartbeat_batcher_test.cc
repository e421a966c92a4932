// The heartbeat batcher on simulated time: beats of one window become one batch per leader,
// every beat gets its own result, and a failed batch fails every beat in it.
#include "muster/net/agent/per_process/heartbeat_batcher_actor.h"

#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "tests/testing/deterministic_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

constexpr uint64_t kRestarted = 666;  // the stand-in leader refuses this incarnation

struct LeaderLog {
  std::vector<int> batch_sizes;
};

// A leader stand-in that answers heartbeat batches only.
CoordinatorActor StandInLeader(caf::actor_system& system, std::shared_ptr<LeaderLog> log,
                               bool fail = false) {
  return caf::actor_cast<CoordinatorActor>(system.spawn([log, fail](caf::event_based_actor*) {
    return caf::behavior{[log, fail](const proto::HeartbeatBatchRequest& batch)
                             -> caf::result<proto::HeartbeatBatchResponse> {
      log->batch_sizes.push_back(batch.beats_size());
      if (fail) return ToError(absl::UnavailableError("leader gone"));
      proto::HeartbeatBatchResponse response;
      response.set_leader_incarnation(9);
      for (int i = 0; i < batch.beats_size(); ++i) {
        const auto& beat = batch.beats(i);
        if (beat.incarnation() != kRestarted) continue;
        auto* failure = response.add_failures();
        failure->set_index(i);
        *failure->mutable_task() = beat.source_task();
        SetStatusFields(MakeCoordinationError(absl::AbortedError("Incarnation ID mismatch"),
                                              beat.source_task()),
                        failure);
      }
      return response;
    }};
  }));
}

proto::HeartbeatRequest Beat(int task, uint64_t incarnation) {
  proto::HeartbeatRequest beat;
  *beat.mutable_source_task() = MakeTask("worker", task);
  beat.set_incarnation(incarnation);
  return beat;
}

class HeartbeatBatcherTest : public DeterministicTest {
 protected:
  HeartbeatBatcherActor batcher_ = Keep(SpawnHeartbeatBatcher(system_, {.window = 20ms}));
  std::shared_ptr<LeaderLog> log_ = std::make_shared<LeaderLog>();
};

TEST_F(HeartbeatBatcherTest, BeatsOfOneWindow_OneBatchAnsweredPerBeat) {
  auto leader = Keep(StandInLeader(system_, log_));
  auto a = Send<proto::HeartbeatResponse>(batcher_, Beat(0, 1), leader);
  auto b = Send<proto::HeartbeatResponse>(batcher_, Beat(1, kRestarted), leader);
  auto c = Send<proto::HeartbeatResponse>(batcher_, Beat(2, 3), leader);
  EXPECT_FALSE(a->has_value());  // held for the window
  EXPECT_TRUE(log_->batch_sizes.empty());
  AdvanceTime(20ms);
  EXPECT_EQ(log_->batch_sizes, std::vector<int>{3});
  ASSERT_TRUE(a->has_value() && b->has_value() && c->has_value());
  ASSERT_THAT(**a, IsOk());
  EXPECT_EQ((**a)->leader_incarnation(), 9u);
  EXPECT_THAT(b->value(), StatusIs(Code::kAborted, HasSubstr("Incarnation ID mismatch")));
  EXPECT_TRUE(GetCoordinationError(b->value().status()).has_value());
  EXPECT_THAT(**c, IsOk());
}

TEST_F(HeartbeatBatcherTest, NextWindow_NewBatch) {
  auto leader = Keep(StandInLeader(system_, log_));
  Send<proto::HeartbeatResponse>(batcher_, Beat(0, 1), leader);
  AdvanceTime(20ms);
  auto late = Send<proto::HeartbeatResponse>(batcher_, Beat(0, 1), leader);
  AdvanceTime(20ms);
  EXPECT_EQ(log_->batch_sizes, (std::vector<int>{1, 1}));
  EXPECT_THAT(late->value(), IsOk());
}

TEST_F(HeartbeatBatcherTest, TwoLeaders_OneBatchEach) {
  auto first = Keep(StandInLeader(system_, log_));
  auto second = Keep(StandInLeader(system_, log_));
  Send<proto::HeartbeatResponse>(batcher_, Beat(0, 1), first);
  Send<proto::HeartbeatResponse>(batcher_, Beat(1, 1), second);
  Send<proto::HeartbeatResponse>(batcher_, Beat(2, 1), first);
  AdvanceTime(20ms);
  auto sizes = log_->batch_sizes;
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<int>{1, 2}));
}

TEST_F(HeartbeatBatcherTest, BatchFails_EveryBeatGetsTheError) {
  auto leader = Keep(StandInLeader(system_, log_, /*fail=*/true));
  auto a = Send<proto::HeartbeatResponse>(batcher_, Beat(0, 1), leader);
  auto b = Send<proto::HeartbeatResponse>(batcher_, Beat(1, 1), leader);
  AdvanceTime(20ms);
  EXPECT_THAT(a->value(), StatusIs(Code::kUnavailable, HasSubstr("leader gone")));
  EXPECT_THAT(b->value(), StatusIs(Code::kUnavailable));
}

TEST_F(HeartbeatBatcherTest, NoLeader_FailedPreconditionAtOnce) {
  auto reply = Call<proto::HeartbeatResponse>(batcher_, Beat(0, 1), CoordinatorActor{});
  EXPECT_THAT(reply, StatusIs(Code::kFailedPrecondition, HasSubstr("/job:worker/task:0")));
}

}  // namespace
}  // namespace muster::testing
