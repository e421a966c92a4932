// BarrierRegistry: routing decisions alone, then counters, cancellation, one-time barriers,
// inspection and actor lifetimes through the coordinator stand-in (simulated time).
#include "muster/actors/barriers/barrier_registry.h"

#include <chrono>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
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
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

using Action = BarrierRoute::Action;
const BarrierClock::time_point kNow = BarrierClock::time_point{} + 1h;

class BarrierRegistryTest : public BarrierTest {
 protected:
  // An actor handle for routing tests; it never answers.
  BarrierActor Dummy() {
    return Keep(system_.spawn([]() -> BarrierActor::behavior_type {
      return {
          [](const proto::BarrierRequest&) { return proto::BarrierResponse(); },
          [](const proto::CancelBarrierRequest&) { return proto::CancelBarrierResponse(); },
          [](const proto::CoordinatedTaskStateInfo&) {},
          [](const proto::GetBarriersRequest&) { return proto::GetBarriersResponse(); },
          [](deadline_atom) {},
      };
    }));
  }

  // Starts instance `counter` of `id` in `registry` with a dummy actor.
  BarrierActor StartLive(BarrierRegistry& registry, const ClusterView& view, const std::string& id,
                         int64_t counter = 0) {
    proto::BarrierRequest request = Barrier(id, Worker(0), counter);
    BarrierRoute route = registry.RouteBarrier(&request, view, kNow);
    EXPECT_EQ(route.action, Action::kStart);
    BarrierActor actor = Dummy();
    registry.Started(id, actor);
    return actor;
  }

  Reply<proto::CancelBarrierResponse> CancelAt(const testing::BarrierStandInActor& stand_in,
                                               const proto::CancelBarrierRequest& request) {
    return Send<proto::CancelBarrierResponse>(stand_in, request);
  }
};

TEST_F(BarrierRegistryTest, RouteBarrier_FirstCall_StartsInstanceWithResolvedSpec) {
  ClusterView view(Cluster(3, 1));
  BarrierRegistry registry;
  proto::BarrierRequest request = Barrier("b", Worker(2), 0, 10s);
  BarrierRoute route = registry.RouteBarrier(&request, view, kNow);
  ASSERT_EQ(route.action, Action::kStart);
  const BarrierSpec& spec = *route.spec;
  EXPECT_EQ(spec.id, "b");
  EXPECT_EQ(spec.counter, 0);
  EXPECT_EQ(spec.participants->size(), 4);
  EXPECT_TRUE(spec.participants->whole_cluster());
  EXPECT_EQ(TaskName(spec.first_task), "/job:worker/task:2");
  EXPECT_EQ(spec.deadline, kNow + 10s);
  EXPECT_FALSE(spec.unrepeatable);
  EXPECT_EQ(registry.live_count(), 1u);
}

TEST_F(BarrierRegistryTest, RouteBarrier_FirstCallWithLaterCounter_InternalPayloadMinusOne) {
  ClusterView view(Cluster(2));
  BarrierRegistry registry;
  proto::BarrierRequest request = Barrier("b", Worker(0), 4);
  BarrierRoute route = registry.RouteBarrier(&request, view, kNow);
  ASSERT_EQ(route.action, Action::kReply);
  EXPECT_THAT(route.reply, StatusIs(absl::StatusCode::kInternal,
                                    AllOf(HasSubstr("b::4"), HasSubstr("restarted"))));
  EXPECT_EQ(GetBarrierCounter(route.reply.status()), -1);
  EXPECT_EQ(registry.live_count() + registry.finished_count(), 0u);
}

TEST_F(BarrierRegistryTest, RouteBarrier_EmptyId_InvalidArgument) {
  ClusterView view(Cluster(2));
  BarrierRegistry registry;
  proto::BarrierRequest request = Barrier("", Worker(0));
  EXPECT_THAT(registry.RouteBarrier(&request, view, kNow).reply,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty barrier_id")));
}

TEST_F(BarrierRegistryTest, RouteBarrier_IdOverLimit_InvalidArgumentNothingKept) {
  ClusterView view(Cluster(2));
  BarrierRegistry registry;
  proto::BarrierRequest request = Barrier(std::string(kMaxBarrierIdBytes + 1, 'b'), Worker(0));
  EXPECT_THAT(registry.RouteBarrier(&request, view, kNow).reply,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("barrier_id of 1025 bytes"), HasSubstr("at most 1024"))));
  EXPECT_EQ(registry.live_count() + registry.finished_count(), 0u);
  proto::BarrierRequest longest = Barrier(std::string(kMaxBarrierIdBytes, 'b'), Worker(0));
  EXPECT_EQ(registry.RouteBarrier(&longest, view, kNow).action, Action::kStart);
}

TEST_F(BarrierRegistryTest, RouteBarrier_ConfiguredIdLimits_Apply) {
  ClusterView view(Cluster(2));
  BarrierRegistry registry({}, BarrierLimits{.max_id_bytes = 8, .max_ids = 1});
  proto::BarrierRequest long_id = Barrier("123456789", Worker(0));
  EXPECT_THAT(registry.RouteBarrier(&long_id, view, kNow).reply,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 8 bytes")));
  proto::BarrierRequest first = Barrier("a", Worker(0));
  EXPECT_EQ(registry.RouteBarrier(&first, view, kNow).action, Action::kStart);
  proto::BarrierRequest second = Barrier("b", Worker(0));
  EXPECT_THAT(registry.RouteBarrier(&second, view, kNow).reply,
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("at most 1 ids")));
}

TEST_F(BarrierRegistryTest, RouteBarrier_TimeoutOverTheMost_InvalidArgumentNothingKept) {
  ClusterView view(Cluster(2));
  BarrierRegistry registry;
  proto::BarrierRequest huge = Barrier("b", Worker(0));
  huge.set_barrier_timeout_in_ms(kMaxBarrierTimeoutMs + 1);
  EXPECT_THAT(registry.RouteBarrier(&huge, view, kNow).reply,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("a timeout of ", kMaxBarrierTimeoutMs + 1, " ms"))));
  EXPECT_EQ(registry.live_count() + registry.finished_count(), 0u);
  proto::BarrierRequest longest = Barrier("b", Worker(0));
  longest.set_barrier_timeout_in_ms(kMaxBarrierTimeoutMs);
  EXPECT_EQ(registry.RouteBarrier(&longest, view, kNow).action, Action::kStart);
}

TEST(BarrierIdLimitsTest, NewIdBeyondTheCount_ResourceExhaustedKnownIdsStillServed) {
  const proto::CoordinatedTask task = MakeTask("worker", 0);
  EXPECT_THAT(CheckBarrierIdLimits("step", /*known=*/false, kMaxBarrierIds, task),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("Reuse ids")));
  EXPECT_THAT(CheckBarrierIdLimits("step", /*known=*/true, kMaxBarrierIds, task), IsOk());
  EXPECT_THAT(CheckBarrierIdLimits("step", /*known=*/false, kMaxBarrierIds - 1, task), IsOk());
}

TEST_F(BarrierRegistryTest, RouteBarrier_RecoverableParticipantInError_StartsWithItsIncarnation) {
  ClusterView view(Cluster(2, 1, {"ps"}));
  view.Update(State(MakeTask("ps", 0), proto::TASKSTATE_ERROR, 9, absl::UnavailableError("x")));
  BarrierRegistry registry;
  proto::BarrierRequest request = Barrier("b", Worker(0));
  BarrierRoute route = registry.RouteBarrier(&request, view, kNow);
  ASSERT_EQ(route.action, Action::kStart);
  int ps_index = *route.spec->participants->IndexOf(MakeTask("ps", 0));
  EXPECT_EQ(route.spec->recoverable.at(ps_index), 9u);
  EXPECT_EQ(route.spec->recoverable.size(), 1u);
}

TEST_F(BarrierRegistryTest, RouteBarrier_LiveInstance_ForwardsToRecordedActor) {
  ClusterView view(Cluster(2));
  BarrierRegistry registry;
  BarrierActor actor = StartLive(registry, view, "b");
  proto::BarrierRequest request = Barrier("b", Worker(1));
  BarrierRoute route = registry.RouteBarrier(&request, view, kNow);
  EXPECT_EQ(route.action, Action::kForward);
  EXPECT_EQ(route.actor, actor);
}

TEST_F(BarrierRegistryTest, RouteBarrier_RecoverableCounterZeroWhileLive_JoinsLiveCounter) {
  ClusterView view(Cluster(2, 1, {"ps"}));
  BarrierRegistry registry;
  StartLive(registry, view, "b");
  registry.Finish("b", 0, absl::OkStatus());
  StartLive(registry, view, "b", 1);
  proto::BarrierRequest request = Barrier("b", MakeTask("ps", 0), 0);
  EXPECT_EQ(registry.RouteBarrier(&request, view, kNow).action, Action::kForward);
  EXPECT_EQ(request.counter(), 1);
}

TEST_F(BarrierRegistryTest, RouteBarrier_RecoverableCounterZeroAfterFinish_StartsNextInstance) {
  ClusterView view(Cluster(2, 1, {"ps"}));
  BarrierRegistry registry;
  StartLive(registry, view, "b");
  registry.Finish("b", 0, absl::OkStatus());
  proto::BarrierRequest request = Barrier("b", MakeTask("ps", 0), 0);
  BarrierRoute route = registry.RouteBarrier(&request, view, kNow);
  ASSERT_EQ(route.action, Action::kStart);
  EXPECT_EQ(route.spec->counter, 1);
  EXPECT_EQ(request.counter(), 1);
}

TEST_F(BarrierRegistryTest, Finish_LiveInstance_ReturnsActorKeepsOnlyTheResult) {
  ClusterView view(Cluster(2));
  BarrierRegistry registry;
  BarrierActor actor = StartLive(registry, view, "b");
  EXPECT_EQ(registry.Finish("b", 0, absl::CancelledError("c")), actor);
  EXPECT_EQ(registry.live_count(), 0u);
  EXPECT_EQ(registry.finished_count(), 1u);
  EXPECT_THAT(registry.LastResult("b"),
              ::testing::Optional(StatusIs(absl::StatusCode::kCancelled)));
  EXPECT_FALSE(registry.Finish("b", 0, absl::OkStatus()));  // not live any more
}

TEST_F(BarrierRegistryTest, LiveActorsFor_OnlyInstancesTheTaskParticipatesIn) {
  ClusterView view(Cluster(3));
  BarrierRegistry registry;
  BarrierActor all = StartLive(registry, view, "all");
  proto::BarrierRequest request = Barrier("pair", Worker(0), 0, 10s, {Worker(0), Worker(1)});
  ASSERT_EQ(registry.RouteBarrier(&request, view, kNow).action, Action::kStart);
  BarrierActor pair = Dummy();
  registry.Started("pair", pair);
  EXPECT_THAT(registry.LiveActorsFor(Worker(2)), ElementsAre(all));
  EXPECT_EQ(registry.LiveActorsFor(Worker(1)).size(), 2u);
  EXPECT_EQ(registry.LiveActors().size(), 2u);
}

TEST_F(BarrierRegistryTest, Counters_TwoConsecutiveBarriers_SecondHasCounterOne) {
  auto stand_in = StandIn(Cluster(2));
  for (int64_t counter : {0, 1}) {
    Reply<proto::BarrierResponse> r0 = Arrive(stand_in, Barrier("b", Worker(0), counter));
    Reply<proto::BarrierResponse> r1 = Arrive(stand_in, Barrier("b", Worker(1), counter));
    ASSERT_TRUE(r0->has_value() && r1->has_value());
    ASSERT_THAT(**r0, IsOk());
    EXPECT_EQ((**r0)->counter(), counter);
  }
  EXPECT_EQ(probe_->spawned.size(), 2u);
}

TEST_F(BarrierRegistryTest, Counters_PreviousErrorRepeatedToLateCallerImmediately) {
  auto stand_in = StandIn(Cluster(2));
  Arrive(stand_in, Barrier("b", Worker(0), 0, 2s));
  AdvanceTime(2s);
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(1), 0)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("b::0")));
}

TEST_F(BarrierRegistryTest, Counters_PassedBarrierSameCounter_ReturnsImmediately) {
  auto stand_in = StandIn(Cluster(1));
  ASSERT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(0))), IsOk());
  auto again = Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(0)));
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->counter(), 0);
  EXPECT_EQ(probe_->spawned.size(), 1u);
}

TEST_F(BarrierRegistryTest, Finished_NonParticipant_InvalidArgumentBeforeStoredResult) {
  auto stand_in = StandIn(Cluster(3));
  const std::vector<proto::CoordinatedTask> pair = {Worker(0), Worker(1)};
  Arrive(stand_in, Barrier("b", Worker(0), 0, 10s, pair));
  ASSERT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(1), 0, 10s, pair)),
              IsOk());
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(2), 0, 10s, pair)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/job:worker/task:2")));
}

TEST_F(BarrierRegistryTest, Finished_OtherTaskList_InvalidArgumentBeforeStoredResult) {
  auto stand_in = StandIn(Cluster(3));
  const std::vector<proto::CoordinatedTask> pair = {Worker(0), Worker(1)};
  Arrive(stand_in, Barrier("b", Worker(0), 0, 10s, pair));
  ASSERT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(1), 0, 10s, pair)),
              IsOk());
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in,
                                           Barrier("b", Worker(1), 0, 10s, {Worker(1), Worker(2)})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Conflicting tasks")));
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(1), 0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("No tasks were specified")));
  auto again = Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(1), 0, 10s, pair));
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->counter(), 0);
}

TEST_F(BarrierRegistryTest, Counters_OngoingWithMismatchedCounter_InternalToAll) {
  auto stand_in = StandIn(Cluster(3));
  Reply<proto::BarrierResponse> waiting = Arrive(stand_in, Barrier("b", Worker(0), 0));
  Reply<proto::BarrierResponse> wrong = Arrive(stand_in, Barrier("b", Worker(1), 5));
  ASSERT_TRUE(waiting->has_value() && wrong->has_value());
  EXPECT_THAT(**waiting, StatusIs(absl::StatusCode::kInternal,
                                  AllOf(HasSubstr("b::5"), HasSubstr("0-th instance"))));
  EXPECT_EQ(GetBarrierCounter((**wrong).status()), 0);
}

TEST_F(BarrierRegistryTest, Counters_WrongCounterAfterPass_InternalForCallerOnly) {
  auto stand_in = StandIn(Cluster(1));
  ASSERT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(0), 0)), IsOk());
  ASSERT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(0), 1)), IsOk());
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(0), 3)),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("1-th instance"), HasSubstr("too quick"))));
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(0), 0)),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("restarted")));
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(0), 1)), IsOk());
}

TEST_F(BarrierRegistryTest, Cancel_Waiting_CancelledToWaitersAndLaterCalls) {
  auto stand_in = StandIn(Cluster(3));
  Reply<proto::BarrierResponse> waiting = Arrive(stand_in, Barrier("b", Worker(0)));
  EXPECT_THAT(Call<proto::CancelBarrierResponse>(stand_in, Cancel("b", Worker(2))), IsOk());
  ASSERT_TRUE(waiting->has_value());
  EXPECT_THAT(**waiting, StatusIs(absl::StatusCode::kCancelled,
                                  HasSubstr("cancelled by task: /job:worker/task:2")));
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(1))),
              StatusIs(absl::StatusCode::kCancelled));
}

TEST_F(BarrierRegistryTest, Cancel_AfterPass_FailedPreconditionNamingCode) {
  auto stand_in = StandIn(Cluster(1));
  ASSERT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(0))), IsOk());
  EXPECT_THAT(Call<proto::CancelBarrierResponse>(stand_in, Cancel("b", Worker(0))),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("already been passed with status code: OK")));
}

TEST_F(BarrierRegistryTest, Cancel_WrongCounter_FailedPreconditionBarrierKeepsWaiting) {
  auto stand_in = StandIn(Cluster(2));
  Reply<proto::BarrierResponse> waiting = Arrive(stand_in, Barrier("b", Worker(0)));
  EXPECT_THAT(Call<proto::CancelBarrierResponse>(stand_in, Cancel("b", Worker(1), 2)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("0-th instance")));
  EXPECT_FALSE(waiting->has_value());
}

TEST_F(BarrierRegistryTest, Cancel_BeforeFirstCall_LaterCallsWithThatCounterCancelled) {
  auto stand_in = StandIn(Cluster(2));
  EXPECT_THAT(Call<proto::CancelBarrierResponse>(stand_in, Cancel("b", Worker(1))), IsOk());
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b", Worker(0))),
              StatusIs(absl::StatusCode::kCancelled));
  EXPECT_TRUE(probe_->spawned.empty());
}

TEST_F(BarrierRegistryTest, Unrepeatable_AfterFinish_CannotRunAgain) {
  const std::string id = "[Init]Wait_for_all_tasks_to_register";
  auto stand_in = StandIn(Cluster(1, 1, {"ps"}), {id});
  Reply<proto::BarrierResponse> first = Arrive(stand_in, Barrier(id, Worker(0)));
  AdvanceTime(10s);
  ASSERT_TRUE(first->has_value());
  ASSERT_THAT(**first, StatusIs(absl::StatusCode::kDeadlineExceeded));
  // Neither a later counter nor a restarted recoverable task (counter 0) runs it again.
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier(id, Worker(0), 1)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("one-time barrier")));
  EXPECT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier(id, MakeTask("ps", 0), 0)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(Call<proto::CancelBarrierResponse>(stand_in, Cancel(id, Worker(0), 1)),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(probe_->spawned.size(), 1u);
}

TEST_F(BarrierRegistryTest, GetBarriers_ListsOpenInstancesOnly) {
  auto stand_in = StandIn(Cluster(3));
  Arrive(stand_in, Barrier("zeta", Worker(1), 0, 10s));
  Arrive(stand_in, Barrier("alpha", Worker(0), 0, 5s, {Worker(0), Worker(2)}));
  ASSERT_THAT(
      Call<proto::BarrierResponse>(stand_in, Barrier("done", Worker(0), 0, 5s, {Worker(0)})),
      IsOk());
  AdvanceTime(2s);
  auto response = Call<proto::GetBarriersResponse>(stand_in, proto::GetBarriersRequest());
  ASSERT_THAT(response, IsOk());
  ASSERT_EQ(response->barriers_size(), 2);
  const proto::BarrierInfo& alpha = response->barriers(0);
  EXPECT_EQ(alpha.barrier_id(), "alpha");
  EXPECT_EQ(alpha.deadline_in_ms(), 3000);
  EXPECT_EQ(TaskName(alpha.first_task()), "/job:worker/task:0");
  EXPECT_EQ(alpha.arrived(), 1);
  EXPECT_EQ(alpha.total(), 2);
  ASSERT_EQ(alpha.waiting_for_size(), 1);
  EXPECT_EQ(TaskName(alpha.waiting_for(0)), "/job:worker/task:2");
  EXPECT_EQ(response->barriers(1).barrier_id(), "zeta");
  EXPECT_EQ(response->barriers(1).waiting_for_size(), 2);
}

TEST_F(BarrierRegistryTest, GetBarriers_WaitedMsGrowsWithSimulatedTimeFromTheFirstCall) {
  auto stand_in = StandIn(Cluster(3));
  AdvanceTime(7s);  // time before the first call does not count
  Arrive(stand_in, Barrier("b", Worker(0), 0, 10s));
  auto info = [&]() -> proto::BarrierInfo {
    auto response = Call<proto::GetBarriersResponse>(stand_in, proto::GetBarriersRequest());
    EXPECT_THAT(response, IsOk());
    if (!response.ok() || response->barriers_size() != 1) return proto::BarrierInfo();
    return response->barriers(0);
  };
  EXPECT_EQ(info().waited_ms(), 0);
  AdvanceTime(1500ms);
  EXPECT_EQ(info().waited_ms(), 1500);
  Arrive(stand_in, Barrier("b", Worker(1), 0, 10s));  // a later arrival does not restart it
  AdvanceTime(2500ms);
  proto::BarrierInfo later = info();
  EXPECT_EQ(later.waited_ms(), 4000);
  EXPECT_EQ(later.deadline_in_ms(), 6000);
  EXPECT_EQ(later.arrived(), 2);
  AdvanceTime(5999ms);
  EXPECT_EQ(info().waited_ms(), 9999);
}

TEST_F(BarrierRegistryTest, GetBarriers_NoOpenBarrier_Empty) {
  auto stand_in = StandIn(Cluster(1));
  auto response = Call<proto::GetBarriersResponse>(stand_in, proto::GetBarriersRequest());
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->barriers_size(), 0);
}

TEST_F(BarrierRegistryTest, Lifetime_FinishedActorsStopOnlyResultsRemain) {
  auto stand_in = StandIn(Cluster(1));
  for (int i = 0; i < 5; ++i) {
    ASSERT_THAT(Call<proto::BarrierResponse>(stand_in, Barrier("b" + std::to_string(i), Worker(0))),
                IsOk());
  }
  EXPECT_EQ(probe_->spawned.size(), 5u);
  EXPECT_EQ(probe_->stopped, 5);
  EXPECT_EQ(probe_->registry->live_count(), 0u);
  EXPECT_EQ(probe_->registry->finished_count(), 5u);
}

}  // namespace
}  // namespace muster
