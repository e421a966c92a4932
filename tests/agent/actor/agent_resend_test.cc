// What the agent sends a restarted leader, against a recording stand-in coordinator: writes
// carry request ids naming the oldest write still in flight, and a re-sent write keeps its id;
// a refused register fails the calls; a get cancelled while reconnecting is not re-sent;
// watches resume from the last revision delivered, and repeated events are dropped.
#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/agent/actor/reconnect_fixture.h"
#include "tests/testing/recording_coordinator.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

class AgentResendTest : public ReconnectFixture {
 protected:
  void SetUp() override {
    first_->hold_inserts = true;
    leader_ = Keep(SpawnRecordingCoordinator(system_, first_));
  }

  void Restart() {
    KillLeader();
    *next_leader_ = Keep(SpawnRecordingCoordinator(system_, second_));
    AdvanceTime(1s);
  }

  std::shared_ptr<RecordingCoordinator> first_ = std::make_shared<RecordingCoordinator>();
  std::shared_ptr<RecordingCoordinator> second_ = std::make_shared<RecordingCoordinator>();
};

TEST_F(AgentResendTest, Writes_IncreasingRequestIdsAndAResentWriteKeepsItsId) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  auto held = Send<proto::InsertKeyValueResponse>(a0, Insert("a", "1"));
  proto::IncrementKeyValueRequest increment;
  increment.set_key("n");
  increment.set_increment(1);
  ASSERT_THAT(Call<proto::IncrementKeyValueResponse>(a0, increment), IsOk());
  proto::DeleteKeyValueRequest del;
  del.set_key("d");
  ASSERT_THAT(Call<proto::DeleteKeyValueResponse>(a0, del), IsOk());
  proto::UpdateKeyValueRequest update;
  update.mutable_kv()->set_key("u");
  ASSERT_THAT(Call<proto::UpdateKeyValueResponse>(a0, update), IsOk());
  proto::CompareAndSwapRequest swap;
  swap.set_key("c");
  ASSERT_THAT(Call<proto::CompareAndSwapResponse>(a0, swap), IsOk());
  ASSERT_EQ(first_->inserts.size(), 1u);
  const proto::RequestId id = first_->inserts[0].request_id();
  EXPECT_NE(id.client(), 0u);
  std::vector<uint64_t> seqs = {id.seq(), first_->increments.at(0).request_id().seq(),
                                first_->deletes.at(0).request_id().seq(),
                                first_->updates.at(0).request_id().seq(),
                                first_->swaps.at(0).request_id().seq()};
  EXPECT_THAT(seqs, ElementsAre(1, 2, 3, 4, 5));
  // The held insert (1) is the oldest write in flight: each later write says so.
  std::vector<uint64_t> answered_below = {id.answered_below(),
                                          first_->increments[0].request_id().answered_below(),
                                          first_->deletes[0].request_id().answered_below(),
                                          first_->updates[0].request_id().answered_below(),
                                          first_->swaps[0].request_id().answered_below()};
  EXPECT_THAT(answered_below, ElementsAre(1, 1, 1, 1, 1));
  EXPECT_EQ(first_->swaps[0].request_id().client(), id.client());
  EXPECT_FALSE(held->has_value());
  Restart();
  ASSERT_EQ(second_->registers.size(), 1u);
  EXPECT_TRUE(second_->registers[0].reconnect());
  EXPECT_EQ(second_->registers[0].incarnation(), 100u);
  ASSERT_EQ(second_->inserts.size(), 1u);  // the held write, again, with the same id
  EXPECT_EQ(second_->inserts[0].request_id().client(), id.client());
  EXPECT_EQ(second_->inserts[0].request_id().seq(), 1u);
  EXPECT_EQ(second_->inserts[0].request_id().answered_below(), 1u);
  ASSERT_TRUE(held->has_value());
  EXPECT_THAT(**held, IsOk());
  ASSERT_THAT(Call<proto::IncrementKeyValueResponse>(a0, increment), IsOk());
  EXPECT_EQ(second_->increments.at(0).request_id().seq(), 6u);
  EXPECT_EQ(second_->increments.at(0).request_id().answered_below(), 6u);  // none in flight
  EXPECT_TRUE(errors_->empty());
}

// The oldest write in flight is found among the pending calls past a waiting get and a write
// that carries another client's id (a direct call's, made through the actor).
TEST_F(AgentResendTest, AnsweredBelow_SkipsWaitingGetsAndWritesNumberedElsewhere) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  auto get = Send<proto::GetKeyValueResponse>(a0, Get("nccl/id"));  // held by the leader
  proto::InsertKeyValueRequest foreign = Insert("f", "1");
  foreign.mutable_request_id()->set_client(77);
  foreign.mutable_request_id()->set_seq(9);
  auto held_foreign = Send<proto::InsertKeyValueResponse>(a0, foreign);
  proto::IncrementKeyValueRequest increment;
  increment.set_key("n");
  increment.set_increment(1);
  ASSERT_THAT(Call<proto::IncrementKeyValueResponse>(a0, increment), IsOk());
  auto held_own = Send<proto::InsertKeyValueResponse>(a0, Insert("a", "1"));
  ASSERT_THAT(Call<proto::IncrementKeyValueResponse>(a0, increment), IsOk());
  ASSERT_EQ(first_->inserts.size(), 2u);
  EXPECT_EQ(first_->inserts[0].request_id().client(), 77u);  // kept as it came
  EXPECT_EQ(first_->inserts[0].request_id().seq(), 9u);
  ASSERT_EQ(first_->increments.size(), 2u);
  EXPECT_EQ(first_->increments[0].request_id().seq(), 1u);
  EXPECT_EQ(first_->increments[0].request_id().answered_below(), 1u);  // none of its own
  EXPECT_EQ(first_->inserts[1].request_id().seq(), 2u);
  EXPECT_EQ(first_->increments[1].request_id().seq(), 3u);
  EXPECT_EQ(first_->increments[1].request_id().answered_below(), 2u);  // the held insert
  EXPECT_FALSE(get->has_value());
  EXPECT_FALSE(held_foreign->has_value());
  EXPECT_FALSE(held_own->has_value());
}

TEST_F(AgentResendTest, ZeroTimeout_WritesCarryNoRequestId) {
  first_->hold_inserts = false;
  auto a0 = Spawn(0, /*reconnect_timeout=*/0s);
  ASSERT_THAT(Connect(a0), IsOk());
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(a0, Insert("a", "1")), IsOk());
  ASSERT_EQ(first_->inserts.size(), 1u);
  EXPECT_FALSE(first_->inserts[0].has_request_id());
}

TEST_F(AgentResendTest, RegisterRefused_CallsUnavailableNamingTheLeadersAnswer) {
  second_->refuse_reconnect =
      MakeCoordinationError(absl::FailedPreconditionError("does not know incarnation 100"));
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  auto held = Send<proto::InsertKeyValueResponse>(a0, Insert("a", "1"));
  Restart();
  ASSERT_TRUE(held->has_value());
  EXPECT_THAT(**held, StatusIs(Code::kUnavailable, HasSubstr("does not know incarnation 100")));
  EXPECT_TRUE(second_->inserts.empty());
  ASSERT_EQ(errors_->size(), 1u);
  EXPECT_THAT(errors_->front(), StatusIs(Code::kUnavailable, HasSubstr("refused")));
}

TEST_F(AgentResendTest, CancelledGetWhileReconnecting_NotResent) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  auto get = Send<proto::GetKeyValueResponse>(a0, Get("nccl/id"));
  ASSERT_EQ(first_->gets.size(), 1u);
  KillLeader();
  caf::anon_send(a0, cancel_atom::value, std::string("nccl/id"));
  Drain();
  ASSERT_TRUE(get->has_value());
  EXPECT_THAT(**get, StatusIs(Code::kCancelled, HasSubstr("nccl/id")));
  *next_leader_ = Keep(SpawnRecordingCoordinator(system_, second_));
  AdvanceTime(1s);
  EXPECT_FALSE(StatusOf(a0).reconnecting);
  EXPECT_TRUE(second_->gets.empty());
}

class AgentWatchResumeTest : public AgentResendTest {
 protected:
  // Starts a watch of "cfg" whose events are recorded by revision.
  void Watch(const AgentControlActor& agent) {
    proto::WatchKeyRequest request;
    request.set_key("cfg");
    WatchCallback callback{[seen = seen_](const proto::KeyValueChangeEvent& event) {
      seen->push_back(event.revision());
    }};
    ASSERT_THAT(Call<proto::WatchKeyResponse>(agent, request, callback), IsOk());
  }

  void Event(const RecordingCoordinator& leader, int64_t revision) {
    proto::KeyValueChangeEvent event;
    event.set_kind(proto::KeyValueChangeEvent::UPDATED);
    event.set_key("cfg/lr");
    event.set_watched_key("cfg");
    event.set_revision(revision);
    caf::anon_send(leader.watcher, event);
    Drain();
  }

  std::shared_ptr<std::vector<int64_t>> seen_ = std::make_shared<std::vector<int64_t>>();
};

TEST_F(AgentWatchResumeTest, ResumesFromTheLastRevisionAndDropsRepeatedEvents) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  Watch(a0);
  Event(*first_, 11);
  Event(*first_, 12);
  Restart();
  ASSERT_EQ(second_->watches.size(), 1u);
  EXPECT_EQ(second_->watches[0].key(), "cfg");
  EXPECT_EQ(second_->watches[0].from_revision(), 12);
  Event(*second_, 11);  // the resumed leader replays from where it was told
  Event(*second_, 12);
  Event(*second_, 13);
  EXPECT_THAT(*seen_, ElementsAre(11, 12, 13));
  EXPECT_TRUE(StatusOf(a0).dropped_watches.empty());
  EXPECT_TRUE(errors_->empty());
}

TEST_F(AgentWatchResumeTest, ResumeRefused_WatchDroppedNoCallbackAgentRunning) {
  second_->refuse_watch_resume = MakeCoordinationError(
      absl::OutOfRangeError("revision 10 of cfg is no longer in the change history"));
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  Watch(a0);  // revision 10, no event yet: resumed from the response's revision
  Restart();
  ASSERT_EQ(second_->watches.size(), 1u);
  EXPECT_EQ(second_->watches[0].from_revision(), 10);
  Event(*second_, 11);
  EXPECT_TRUE(seen_->empty());
  AgentStatus status = StatusOf(a0);
  EXPECT_EQ(status.state, AgentState::kRunning);
  EXPECT_THAT(status.dropped_watches, ElementsAre("cfg"));
  EXPECT_TRUE(errors_->empty());
}

}  // namespace
}  // namespace muster::testing
