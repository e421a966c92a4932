// The HA front on CAF's test scheduler: a standby answers every request with Unavailable naming
// the active leader (or nobody) and passes nothing on; an active front passes every request to
// its leader and its answer back; only the front itself switches it.
#include "muster/net/ha/ha_front_actor.h"

#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/net/leader/standby_leader.h"
#include "tests/testing/deterministic_fixture.h"
#include "tests/testing/recording_coordinator.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::RecordingCoordinator;
using ::muster::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

class HaFrontTest : public testing::DeterministicTest {
 protected:
  proto::InsertKeyValueRequest Insert() {
    proto::InsertKeyValueRequest request;
    request.mutable_kv()->set_key("k");
    request.mutable_kv()->set_value("v");
    return request;
  }

  std::shared_ptr<RecordingCoordinator> log_ = std::make_shared<RecordingCoordinator>();
  CoordinatorActor leader_ = Keep(SpawnRecordingCoordinator(system_, log_));
  CoordinatorActor front_ = Keep(SpawnHaFront(system_, "train-7"));
};

TEST_F(HaFrontTest, Standby_AnswersUnavailableNamingTheActiveLeaderAndPassesNothingOn) {
  auto none = Call<proto::InsertKeyValueResponse>(front_, Insert());
  EXPECT_THAT(none, StatusIs(Code::kUnavailable,
                             HasSubstr("standby of HA job train-7; no leader is active yet")));
  EXPECT_EQ(StandbyActiveLeader(none.status()), "");
  TellHaFrontStandby(front_, "h1:7400");
  Drain();
  auto named = Call<proto::InsertKeyValueResponse>(front_, Insert());
  EXPECT_THAT(named, StatusIs(Code::kUnavailable, HasSubstr("the active leader is at h1:7400")));
  EXPECT_EQ(StandbyActiveLeader(named.status()), "h1:7400");
  EXPECT_TRUE(log_->inserts.empty());
}

TEST_F(HaFrontTest, Active_PassesRequestsToItsLeaderAndTheirAnswersBack_UntilStandbyAgain) {
  TellHaFrontActive(front_, leader_);
  Drain();
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(front_, Insert()), IsOk());
  ASSERT_EQ(log_->inserts.size(), 1u);
  EXPECT_EQ(log_->inserts[0].kv().key(), "k");
  TellHaFrontStandby(front_, "");
  Drain();
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(front_, Insert()), StatusIs(Code::kUnavailable));
  EXPECT_EQ(log_->inserts.size(), 1u);
}

TEST_F(HaFrontTest, SwitchesFromAnotherActor_AreIgnored) {
  // The switch messages of TellHaFront*, sent by someone else: the front stays a standby.
  auto intruder = system_.spawn([front = front_, leader = leader_](caf::event_based_actor* self) {
    self->send(caf::actor_cast<caf::actor>(front), caf::atom("haactive"),
               caf::actor_cast<caf::actor>(leader));
  });
  Keep(intruder);
  Drain();
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(front_, Insert()), StatusIs(Code::kUnavailable));
  EXPECT_TRUE(log_->inserts.empty());
}

}  // namespace
}  // namespace muster
