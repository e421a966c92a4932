// The barrier combiner against a coordinator in the same actor system, on simulated time: calls
// read in one mailbox turn become one group, every call gets its own answer, a refused call
// gets its own error with the barrier's counter.
#include "muster/net/agent/per_process/barrier_combiner_actor.h"

#include <memory>
#include <optional>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "tests/testing/deterministic_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using Code = absl::StatusCode;
using Results = std::shared_ptr<std::vector<absl::StatusOr<proto::BarrierResponse>>>;

class BarrierCombinerTest : public DeterministicTest {
 protected:
  void SetUp() override {
    CoordinatorOptions options{.incarnation = 7};
    auto* job = options.config.add_coordinated_job_list();
    job->set_name("worker");
    job->set_num_tasks(3);
    leader_ = Keep(SpawnCoordinator(system_, options));
    Drain();
  }

  static proto::BarrierRequest Call(int task, int64_t counter, int64_t timeout_ms = 60'000) {
    proto::BarrierRequest call;
    call.set_barrier_id("step");
    call.set_barrier_timeout_in_ms(timeout_ms);
    call.set_counter(counter);
    *call.mutable_source_task() = MakeTask("worker", task);
    return call;
  }

  // Sends every call from one actor in one go (so they meet in the combiner's mailbox).
  Results SendAll(std::vector<proto::BarrierRequest> calls) {
    auto results = std::make_shared<std::vector<absl::StatusOr<proto::BarrierResponse>>>();
    Keep(system_.spawn([=, combiner = combiner_, leader = leader_](caf::event_based_actor* self) {
      for (const auto& call : calls) {
        self->request(combiner, caf::infinite, call, leader)
            .then([results](const proto::BarrierResponse& r) { results->push_back(r); },
                  [results](caf::error& e) { results->push_back(ToStatus(e)); });
      }
    }));
    Drain();
    return results;
  }

  CoordinatorActor leader_;
  BarrierCombinerActor combiner_ = Keep(SpawnBarrierCombiner(system_));
};

TEST_F(BarrierCombinerTest, CallsOfOneTurn_AllPassWithTheCounter) {
  auto results = SendAll({Call(0, 0), Call(1, 0), Call(2, 0)});
  ASSERT_EQ(results->size(), 3u);
  for (const auto& result : *results) {
    ASSERT_THAT(result, IsOk());
    EXPECT_EQ(result->counter(), 0);
  }
  auto open =
      DeterministicTest::Call<proto::GetBarriersResponse>(leader_, proto::GetBarriersRequest{});
  ASSERT_THAT(open, IsOk());
  EXPECT_EQ(open->barriers_size(), 0);
}

TEST_F(BarrierCombinerTest, WrongCounter_OwnErrorWithBarrierCounterOthersPass) {
  ASSERT_EQ(SendAll({Call(0, 0), Call(1, 0), Call(2, 0)})->size(), 3u);
  auto results = SendAll({Call(0, 1), Call(1, 1), Call(2, 1), Call(2, 5)});
  ASSERT_EQ(results->size(), 4u);
  int passed = 0, refused = 0;
  for (const auto& result : *results) {
    if (result.ok()) {
      EXPECT_EQ(result->counter(), 1);
      ++passed;
      continue;
    }
    ++refused;
    EXPECT_TRUE(GetCoordinationError(result.status()).has_value()) << result.status();
    EXPECT_GE(GetBarrierCounter(result.status()), 0) << result.status();
  }
  EXPECT_EQ(passed, 3);
  EXPECT_EQ(refused, 1);
}

TEST_F(BarrierCombinerTest, MissingTask_EveryCallTimesOutNamingIt) {
  auto results = SendAll({Call(0, 0, 2'000), Call(1, 0, 2'000)});
  EXPECT_TRUE(results->empty());
  AdvanceTime(2s);
  ASSERT_EQ(results->size(), 2u);
  for (const auto& result : *results) {
    EXPECT_THAT(result, StatusIs(Code::kDeadlineExceeded, HasSubstr("worker/2")));
    EXPECT_EQ(GetBarrierCounter(result.status()), 0);
  }
}

TEST_F(BarrierCombinerTest, ParticipantFails_EveryCallInternalCarryingTheFailedTask) {
  AgentActor agent = Keep(system_.spawn([]() -> AgentActor::behavior_type {
    return {[](const proto::ReportErrorToTaskRequest&) {},
            [](const proto::PreemptionNotice&) { return proto::PreemptionAck(); },
            [](const proto::SyncPointNotice&) {}, [](const proto::MembershipNotice&) {}};
  }));
  proto::RegisterTaskRequest join;
  *join.mutable_source_task() = MakeTask("worker", 2);
  join.set_incarnation(5);
  ASSERT_TRUE(DeterministicTest::Call<proto::RegisterTaskResponse>(leader_, join, agent).ok());
  auto results = SendAll({Call(0, 0), Call(1, 0)});
  EXPECT_TRUE(results->empty());
  proto::ReportErrorToServiceRequest report;
  report.set_error_code(static_cast<int>(Code::kUnavailable));
  report.set_error_message("crashed.");
  *report.mutable_error_origin() = MakeTask("worker", 2);
  ASSERT_TRUE(DeterministicTest::Call<proto::ReportErrorToServiceResponse>(leader_, report).ok());
  Drain();
  ASSERT_EQ(results->size(), 2u);
  for (const auto& result : *results) {
    EXPECT_THAT(result, StatusIs(Code::kInternal, HasSubstr("crashed. Barrier Id: step::0")));
    std::optional<proto::CoordinatedTask> failed = FailedTaskOf(result.status());
    ASSERT_TRUE(failed.has_value()) << result.status();
    EXPECT_EQ(TaskName(*failed), "/job:worker/task:2");
    EXPECT_EQ(GetBarrierCounter(result.status()), 0);
  }
}

TEST_F(BarrierCombinerTest, NoLeader_FailedPreconditionAtOnce) {
  auto reply =
      DeterministicTest::Call<proto::BarrierResponse>(combiner_, Call(0, 0), CoordinatorActor{});
  EXPECT_THAT(reply, StatusIs(Code::kFailedPrecondition, HasSubstr("/job:worker/task:0")));
}

}  // namespace
}  // namespace muster::testing
