// Barrier actors, deterministic (simulated time, test scheduler): through the coordinator
// stand-in for the contract of one instance, and alone for the parent protocol.
#include "muster/actors/barriers/barrier_actor.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "tests/testing/barrier_stand_in.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::BarrierTest;
using ::muster::testing::IsOk;
using ::muster::testing::Reply;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

using BarrierReplySlot = Reply<proto::BarrierResponse>;

class BarrierActorTest : public BarrierTest {};

TEST_F(BarrierActorTest, Barrier_EveryTaskArrives_OkWithCounterToAll) {
  auto stand_in = StandIn(Cluster(3));
  BarrierReplySlot r0 = Arrive(stand_in, Barrier("b", Worker(0)));
  BarrierReplySlot r1 = Arrive(stand_in, Barrier("b", Worker(1)));
  EXPECT_FALSE(r0->has_value());
  BarrierReplySlot r2 = Arrive(stand_in, Barrier("b", Worker(2)));
  for (const auto& reply : {r0, r1, r2}) {
    ASSERT_TRUE(reply->has_value());
    ASSERT_THAT(**reply, IsOk());
    EXPECT_EQ((*reply)->value().counter(), 0);
  }
}

TEST_F(BarrierActorTest, Barrier_Subset_PassesWithoutTheOthers) {
  auto stand_in = StandIn(Cluster(4));
  std::vector<proto::CoordinatedTask> subset = {Worker(1), Worker(3)};
  BarrierReplySlot r1 = Arrive(stand_in, Barrier("b", Worker(1), 0, 10s, subset));
  BarrierReplySlot r3 = Arrive(stand_in, Barrier("b", Worker(3), 0, 10s, subset));
  ASSERT_TRUE(r1->has_value() && r3->has_value());
  EXPECT_THAT(**r1, IsOk());
  EXPECT_THAT(**r3, IsOk());
}

TEST_F(BarrierActorTest, Barrier_Deadline_ExactlyFirstArrivalPlusItsTimeout) {
  auto stand_in = StandIn(Cluster(3));
  BarrierReplySlot first = Arrive(stand_in, Barrier("b", Worker(0), 0, 10s));
  AdvanceTime(3s);
  BarrierReplySlot second = Arrive(stand_in, Barrier("b", Worker(1), 0, 1s));
  AdvanceTime(7s - 1ms);
  EXPECT_FALSE(first->has_value());
  EXPECT_FALSE(second->has_value());
  AdvanceTime(1ms);
  ASSERT_TRUE(first->has_value() && second->has_value());
  EXPECT_THAT(**first, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(**second, StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST_F(BarrierActorTest, Barrier_ZeroOrNegativeTimeout_DeadlineExceededAtOnce) {
  auto stand_in = StandIn(Cluster(2));
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("zero", Worker(0), 0, 0ms)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("within 0 ms")));
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("negative", Worker(0), 0, -5ms)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("1/2")));
}

TEST_F(BarrierActorTest, Barrier_Timeout_MessageNamesEveryMissingTaskAndFirstTask) {
  auto stand_in = StandIn(Cluster(13, 2));
  std::vector<BarrierReplySlot> replies;
  for (int id : {5, 0, 1, 2, 4, 6}) replies.push_back(Arrive(stand_in, Barrier("b", Worker(id))));
  AdvanceTime(10s);
  ASSERT_TRUE(replies[0]->has_value());
  absl::Status status = replies[0]->value().status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kDeadlineExceeded,
                               AllOf(HasSubstr("Id: b::0"), HasSubstr("6/15"),
                                     HasSubstr("first task at the barrier: /job:worker/task:5"),
                                     HasSubstr("(9): ps/[0-1], worker/[3,7-12]"))));
  EXPECT_EQ(GetBarrierCounter(status), 0);
  EXPECT_TRUE(GetCoordinationError(status).has_value());
}

TEST_F(BarrierActorTest, Barrier_MismatchedTaskSets_InvalidArgumentToAll) {
  auto stand_in = StandIn(Cluster(4));
  BarrierReplySlot first =
      Arrive(stand_in, Barrier("b", Worker(0), 0, 10s, {Worker(0), Worker(1)}));
  BarrierReplySlot second =
      Arrive(stand_in, Barrier("b", Worker(1), 0, 10s, {Worker(0), Worker(1), Worker(2)}));
  ASSERT_TRUE(first->has_value() && second->has_value());
  EXPECT_THAT(**first, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Conflicting")));
  EXPECT_THAT(**second, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Conflicting")));
}

TEST_F(BarrierActorTest, Barrier_NonParticipatingCaller_InvalidArgumentToAll) {
  auto stand_in = StandIn(Cluster(4));
  std::vector<proto::CoordinatedTask> subset = {Worker(0), Worker(1)};
  BarrierReplySlot waiting = Arrive(stand_in, Barrier("b", Worker(0), 0, 10s, subset));
  BarrierReplySlot outsider = Arrive(stand_in, Barrier("b", Worker(3), 0, 10s, subset));
  ASSERT_TRUE(waiting->has_value() && outsider->has_value());
  EXPECT_THAT(**waiting, StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("non-participating task (/job:worker/task:3)")));
  EXPECT_THAT(**outsider, StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(BarrierActorTest, Barrier_TaskNotInCluster_InvalidArgumentAlsoForLaterCalls) {
  auto stand_in = StandIn(Cluster(2));
  std::vector<proto::CoordinatedTask> tasks = {Worker(0), Worker(1), MakeTask("ps", 0)};
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(0), 0, 10s, tasks)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("(ps/0)"), HasSubstr("not in the cluster"))));
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(1), 0, 10s, tasks)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not in the cluster")));
}

TEST_F(BarrierActorTest, Barrier_SameTaskCallsAgain_EarlierCallCancelledNewOneWaits) {
  auto stand_in = StandIn(Cluster(2));
  BarrierReplySlot earlier = Arrive(stand_in, Barrier("b", Worker(0)));
  BarrierReplySlot later = Arrive(stand_in, Barrier("b", Worker(0)));
  ASSERT_TRUE(earlier->has_value());
  EXPECT_THAT(**earlier, StatusIs(absl::StatusCode::kCancelled, HasSubstr("more recent")));
  EXPECT_FALSE(later->has_value());
  Arrive(stand_in, Barrier("b", Worker(1)));
  ASSERT_TRUE(later->has_value());
  EXPECT_THAT(**later, IsOk());
}

TEST_F(BarrierActorTest, Barrier_ParticipantAlreadyInError_InternalNamingIt) {
  auto stand_in = StandIn(Cluster(3));
  caf::anon_send(stand_in, State(Worker(2), proto::TASKSTATE_ERROR, 1,
                                 absl::UnavailableError("heartbeat timeout")));
  Drain();
  absl::StatusOr<proto::BarrierResponse> reply =
      Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(0)));
  EXPECT_THAT(reply, StatusIs(absl::StatusCode::kInternal,
                              AllOf(HasSubstr("worker/2"), HasSubstr("already in error"),
                                    HasSubstr("heartbeat timeout"))));
  std::optional<proto::CoordinatedTask> failed = FailedTaskOf(reply.status());
  ASSERT_TRUE(failed.has_value()) << reply.status();
  EXPECT_EQ(TaskName(*failed), "/job:worker/task:2");
}

TEST_F(BarrierActorTest, Barrier_ParticipantErrorWhileWaiting_InternalNamingItAndWhy) {
  auto stand_in = StandIn(Cluster(3));
  BarrierReplySlot waiting = Arrive(stand_in, Barrier("b", Worker(0)));
  caf::anon_send(stand_in, State(Worker(1), proto::TASKSTATE_ERROR, 1,
                                 absl::AbortedError("incarnation mismatch")));
  Drain();
  ASSERT_TRUE(waiting->has_value());
  EXPECT_THAT(**waiting, StatusIs(absl::StatusCode::kInternal,
                                  AllOf(HasSubstr("/job:worker/task:1"),
                                        HasSubstr("incarnation mismatch"), HasSubstr("b::0"))));
  std::optional<proto::CoordinatedTask> failed = FailedTaskOf((*waiting)->status());
  ASSERT_TRUE(failed.has_value()) << (*waiting)->status();
  EXPECT_EQ(TaskName(*failed), "/job:worker/task:1");
}

TEST_F(BarrierActorTest, Barrier_ParticipantDisconnectsWhileWaiting_Internal) {
  auto stand_in = StandIn(Cluster(3));
  BarrierReplySlot waiting = Arrive(stand_in, Barrier("b", Worker(0)));
  caf::anon_send(stand_in, State(Worker(2), proto::TASKSTATE_DISCONNECTED));
  Drain();
  ASSERT_TRUE(waiting->has_value());
  EXPECT_THAT(**waiting, StatusIs(absl::StatusCode::kInternal,
                                  AllOf(HasSubstr("disconnected"), HasSubstr("task:2"))));
}

TEST_F(BarrierActorTest, Barrier_RecoverableTaskRestarts_StaleCallCancelledBarrierWaits) {
  auto stand_in = StandIn(Cluster(2, 1, {"ps"}));
  caf::anon_send(stand_in, State(MakeTask("ps", 0), proto::TASKSTATE_CONNECTED, 7));
  Drain();
  BarrierReplySlot stale = Arrive(stand_in, Barrier("b", MakeTask("ps", 0)));
  caf::anon_send(stand_in, State(MakeTask("ps", 0), proto::TASKSTATE_CONNECTED, 8));
  Drain();
  ASSERT_TRUE(stale->has_value());
  EXPECT_THAT(**stale, StatusIs(absl::StatusCode::kCancelled, HasSubstr("Stale barrier")));
  Arrive(stand_in, Barrier("b", Worker(0)));
  BarrierReplySlot w1 = Arrive(stand_in, Barrier("b", Worker(1)));
  EXPECT_FALSE(w1->has_value());
  BarrierReplySlot again = Arrive(stand_in, Barrier("b", MakeTask("ps", 0)));
  ASSERT_TRUE(again->has_value() && w1->has_value());
  EXPECT_THAT(**again, IsOk());
  EXPECT_THAT(**w1, IsOk());
}

TEST_F(BarrierActorTest, Barrier_LeaderShutsDown_AbortedToEveryWaiter) {
  auto stand_in = StandIn(Cluster(3));
  BarrierReplySlot r0 = Arrive(stand_in, Barrier("b", Worker(0)));
  BarrierReplySlot r1 = Arrive(stand_in, Barrier("b", Worker(1)));
  caf::anon_send_exit(stand_in, caf::exit_reason::user_shutdown);
  Drain();
  ASSERT_TRUE(r0->has_value() && r1->has_value());
  EXPECT_THAT(**r0, StatusIs(absl::StatusCode::kAborted, HasSubstr("shutting down")));
  EXPECT_THAT(**r1, StatusIs(absl::StatusCode::kAborted));
  EXPECT_EQ(probe_->stopped, 0);  // the stand-in is gone; the actor stopped on its own
  EXPECT_EQ(probe_->spawned.size(), 1u);
}

// The barrier actor alone, with a parent that records done messages and never stops it.
class BarrierAloneTest : public BarrierTest {
 protected:
  using Done = std::tuple<std::string, int64_t, absl::Status, proto::BarrierInfo>;

  BarrierActor Spawn(int tasks, std::chrono::milliseconds timeout = 10s) {
    std::vector<proto::CoordinatedTask> participants;
    for (int i = 0; i < tasks; ++i) participants.push_back(Worker(i));
    BarrierSpec spec;
    spec.id = "b";
    spec.counter = 3;
    spec.participants = std::make_shared<BarrierParticipants>(participants, tasks);
    spec.first_task = Worker(0);
    spec.timeout = timeout;
    spec.deadline = system_.clock().now() + timeout;
    auto log = done_;
    parent_ = Keep(system_.spawn([log]() -> BarrierParentActor::behavior_type {
      return {[log](barrier_done_atom, const std::string& id, int64_t counter,
                    const caf::error& result, const proto::BarrierInfo& end) {
        log->emplace_back(id, counter, ToStatus(result), end);
      }};
    }));
    return Keep(SpawnBarrier(system_, std::move(spec), parent_));
  }

  std::shared_ptr<std::vector<Done>> done_ = std::make_shared<std::vector<Done>>();
  BarrierParentActor parent_;
};

TEST_F(BarrierAloneTest, Finish_TellsParentOnceWithIdCounterResult) {
  BarrierActor barrier = Spawn(1);
  EXPECT_THAT(Call<proto::BarrierResponse>(barrier, Barrier("b", Worker(0), 3)), IsOk());
  ASSERT_EQ(done_->size(), 1u);
  EXPECT_EQ(std::get<0>(done_->front()), "b");
  EXPECT_EQ(std::get<1>(done_->front()), 3);
  EXPECT_THAT(std::get<2>(done_->front()), IsOk());
  EXPECT_EQ(std::get<3>(done_->front()).ByteSizeLong(), 0u);  // nobody missing
}

TEST_F(BarrierAloneTest, Failed_TellsParentWhoHadNotArrived) {
  BarrierActor barrier = Spawn(4, 5s);
  Send<proto::BarrierResponse>(barrier, Barrier("b", Worker(2), 3));
  AdvanceTime(5s);
  ASSERT_EQ(done_->size(), 1u);
  EXPECT_THAT(std::get<2>(done_->front()), StatusIs(absl::StatusCode::kDeadlineExceeded));
  const proto::BarrierInfo& end = std::get<3>(done_->front());
  EXPECT_EQ(end.arrived(), 1);
  EXPECT_EQ(end.total(), 4);
  ASSERT_EQ(end.waiting_for_size(), 3);
  EXPECT_EQ(TaskName(end.waiting_for(0)), "/job:worker/task:0");
  EXPECT_EQ(TaskName(end.waiting_for(1)), "/job:worker/task:1");
  EXPECT_EQ(TaskName(end.waiting_for(2)), "/job:worker/task:3");
}

TEST_F(BarrierAloneTest, Failed_ListsAtMost64OfThoseMissing) {
  BarrierActor barrier = Spawn(100, 5s);
  Send<proto::BarrierResponse>(barrier, Barrier("b", Worker(0), 3));
  AdvanceTime(5s);
  ASSERT_EQ(done_->size(), 1u);
  const proto::BarrierInfo& end = std::get<3>(done_->front());
  EXPECT_EQ(end.total() - end.arrived(), 99);
  EXPECT_EQ(end.waiting_for_size(), 64);
}

TEST_F(BarrierAloneTest, LateCall_AfterFinishBeforeStop_StoredResult) {
  BarrierActor barrier = Spawn(2, 5s);
  Send<proto::BarrierResponse>(barrier, Barrier("b", Worker(0), 3));
  AdvanceTime(5s);
  EXPECT_THAT(Call<proto::BarrierResponse>(barrier, Barrier("b", Worker(1), 3)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("b::3")));
  EXPECT_EQ(done_->size(), 1u);
}

TEST_F(BarrierAloneTest, ExitWhileWaiting_AbortedAndParentTold) {
  BarrierActor barrier = Spawn(2);
  BarrierReplySlot waiting = Send<proto::BarrierResponse>(barrier, Barrier("b", Worker(0), 3));
  caf::anon_send_exit(barrier, caf::exit_reason::user_shutdown);
  Drain();
  ASSERT_TRUE(waiting->has_value());
  EXPECT_THAT(**waiting, StatusIs(absl::StatusCode::kAborted, HasSubstr("b::3")));
  ASSERT_EQ(done_->size(), 1u);
  EXPECT_THAT(std::get<2>(done_->front()), StatusIs(absl::StatusCode::kAborted));
}

TEST_F(BarrierAloneTest, ExitAfterFinish_StopsTheActor) {
  BarrierActor barrier = Spawn(1);
  ASSERT_THAT(Call<proto::BarrierResponse>(barrier, Barrier("b", Worker(0), 3)), IsOk());
  caf::anon_send_exit(barrier, caf::exit_reason::user_shutdown);
  Drain();
  EXPECT_THAT(Call<proto::BarrierResponse>(barrier, Barrier("b", Worker(0), 3)),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(done_->size(), 1u);
}

TEST_F(BarrierActorTest, Barrier_4096Participants_ReleasesEveryone) {
  constexpr int kTasks = 4096;
  auto stand_in = StandIn(Cluster(kTasks));
  std::vector<BarrierReplySlot> replies;
  replies.reserve(kTasks);
  for (int id = kTasks - 1; id >= 0; --id) {
    replies.push_back(Arrive(stand_in, Barrier("big", Worker(id), 0, 60s)));
  }
  int ok = 0;
  for (const auto& reply : replies) ok += reply->has_value() && (*reply)->ok() ? 1 : 0;
  EXPECT_EQ(ok, kTasks);
  EXPECT_EQ(probe_->registry->live_count(), 0u);
  EXPECT_EQ(probe_->stopped, 1);
}

}  // namespace
}  // namespace muster
