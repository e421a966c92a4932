// The coordinator's events, on simulated time, read back through WatchEvents as a client would:
// the leader's start, registrations, failures with their cause, the supervision decisions that
// follow (a job failed, a task restarted, a new round), barriers, stuck tasks and preemption.
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/actors/observe/events/event_log_actor.h"
#include "muster/actors/supervision/supervision_policy.h"
#include "muster/messages/status/status_codec.h"
#include "tests/actors/leader_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

class CoordinatorEventsTest : public LeaderTest {
 protected:
  CoordinatorActor SpawnWithEvents(proto::CoordinationServiceConfig config,
                                   std::shared_ptr<SupervisionPolicy> policy = nullptr) {
    events_ = Keep(SpawnEventLog(system_, {.wall_start = absl::FromUnixSeconds(1714564800)}));
    CoordinatorOptions options{
        .config = std::move(config), .incarnation = 77, .policy = std::move(policy)};
    options.events = events_;
    leader_ = Keep(SpawnCoordinator(system_, std::move(options)));
    Drain();
    return leader_;
  }

  // Every event the leader kept after `after`, read through the coordinator.
  std::vector<proto::JobEvent> EventsAfter(int64_t after = 0) {
    proto::WatchEventsRequest request;
    request.set_after_seq(after);
    auto reply = Call<proto::WatchEventsResponse>(leader_, request);
    EXPECT_THAT(reply, IsOk());
    if (!reply.ok()) return {};
    return {reply->events().begin(), reply->events().end()};
  }

  static std::vector<proto::JobEventKind> Kinds(const std::vector<proto::JobEvent>& events) {
    std::vector<proto::JobEventKind> kinds;
    for (const auto& event : events) kinds.push_back(event.kind());
    return kinds;
  }

  void ReportError(int id) {
    proto::ReportErrorToServiceRequest report;
    report.set_error_code(static_cast<int>(Code::kInternal));
    report.set_error_message("out of memory");
    *report.mutable_error_origin() = MakeTask("worker", id);
    ASSERT_THAT(Call<proto::ReportErrorToServiceResponse>(leader_, report), IsOk());
  }

  EventLogActor events_;
};

TEST_F(CoordinatorEventsTest, Start_LeaderStartedFresh) {
  SpawnWithEvents(Config(2));
  std::vector<proto::JobEvent> events = EventsAfter();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind(), proto::LEADER_STARTED);
  EXPECT_EQ(events[0].seq(), 1);
  EXPECT_EQ(events[0].detail(), "fresh");
  EXPECT_EQ(events[0].incarnation(), 77u);
}

TEST_F(CoordinatorEventsTest, Register_TaskRegisteredWithItsIncarnation) {
  SpawnWithEvents(Config(2));
  Reports reports;
  ASSERT_THAT(Register("worker", 1, 0x1234, Agent(&reports)), IsOk());
  std::vector<proto::JobEvent> events = EventsAfter(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind(), proto::TASK_REGISTERED);
  EXPECT_EQ(TaskName(events[0].task()), "/job:worker/task:1");
  EXPECT_EQ(events[0].incarnation(), 0x1234u);
  EXPECT_EQ(events[0].state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(events[0].error_code(), 0);
}

TEST_F(CoordinatorEventsTest, Failure_TaskFailedWithItsCauseThenJobFailed) {
  SpawnWithEvents(Config(2));  // fate-sharing: a failure ends the job
  Reports r0, r1;
  ASSERT_THAT(Register("worker", 0, 10, Agent(&r0)), IsOk());
  ASSERT_THAT(Register("worker", 1, 11, Agent(&r1)), IsOk());
  ReportError(1);
  std::vector<proto::JobEvent> events = EventsAfter(3);
  ASSERT_THAT(Kinds(events), ElementsAre(proto::TASK_FAILED, proto::JOB_FAILED));
  EXPECT_EQ(TaskName(events[0].task()), "/job:worker/task:1");
  EXPECT_EQ(events[0].incarnation(), 11u);
  EXPECT_EQ(events[0].state(), proto::TASKSTATE_ERROR);
  EXPECT_EQ(events[0].error_code(), static_cast<int>(Code::kInternal));
  EXPECT_EQ(events[0].error_message(), "out of memory");
  EXPECT_EQ(TaskName(events[1].task()), "/job:worker/task:1");
  EXPECT_EQ(events[1].detail(), "fate-sharing");
  EXPECT_EQ(events[1].error_code(), static_cast<int>(Code::kInternal));
}

TEST_F(CoordinatorEventsTest, AgentLost_TaskFailedUnavailable) {
  SpawnWithEvents(Config(2));
  Reports reports;
  AgentActor agent = Agent(&reports);
  ASSERT_THAT(Register("worker", 0, 10, agent), IsOk());
  caf::anon_send_exit(agent, caf::exit_reason::kill);
  Drain();
  std::vector<proto::JobEvent> events = EventsAfter(2);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].kind(), proto::TASK_FAILED);
  EXPECT_EQ(events[0].error_code(), static_cast<int>(Code::kUnavailable));
  EXPECT_THAT(events[0].error_message(), HasSubstr("connection to worker lost"));
}

TEST_F(CoordinatorEventsTest, OneForOne_TaskRestartedThenDisconnected) {
  SpawnWithEvents(Config(2), std::make_shared<OneForOne>());
  Reports r0;
  ASSERT_THAT(Register("worker", 0, 10, Agent(&r0)), IsOk());
  ReportError(0);
  std::vector<proto::JobEvent> events = EventsAfter(2);
  ASSERT_THAT(Kinds(events),
              ElementsAre(proto::TASK_FAILED, proto::TASK_RESTARTED, proto::TASK_STATE_CHANGED));
  EXPECT_EQ(events[1].detail(), "one-for-one restarts");
  EXPECT_EQ(TaskName(events[1].task()), "/job:worker/task:0");
  EXPECT_EQ(events[2].state(), proto::TASKSTATE_DISCONNECTED);
}

TEST_F(CoordinatorEventsTest, OneForAll_RoundStartedWithTheNewRound) {
  SpawnWithEvents(Config(2), std::make_shared<OneForAll>());
  Reports r0, r1;
  ASSERT_THAT(Register("worker", 0, 10, Agent(&r0)), IsOk());
  ASSERT_THAT(Register("worker", 1, 11, Agent(&r1)), IsOk());
  ReportError(0);
  std::vector<proto::JobEvent> events = EventsAfter(3);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0].kind(), proto::TASK_FAILED);
  EXPECT_EQ(events[1].kind(), proto::ROUND_STARTED);
  EXPECT_EQ(events[1].round(), 1);
  EXPECT_EQ(TaskName(events[1].task()), "/job:worker/task:0");
}

TEST_F(CoordinatorEventsTest, Barrier_OpenedThenPassed) {
  SpawnWithEvents(Config(1));
  Reports r0, p0;
  ASSERT_THAT(Register("worker", 0, 10, Agent(&r0)), IsOk());
  ASSERT_THAT(Register("ps", 0, 20, Agent(&p0)), IsOk());
  proto::BarrierRequest barrier;
  barrier.set_barrier_id("epoch");
  barrier.set_barrier_timeout_in_ms(60'000);
  *barrier.mutable_source_task() = MakeTask("worker", 0);
  auto first = Send<proto::BarrierResponse>(leader_, barrier);
  *barrier.mutable_source_task() = MakeTask("ps", 0);
  ASSERT_THAT(Call<proto::BarrierResponse>(leader_, barrier), IsOk());
  std::vector<proto::JobEvent> events = EventsAfter(3);
  ASSERT_THAT(Kinds(events), ElementsAre(proto::BARRIER_OPENED, proto::BARRIER_PASSED));
  EXPECT_EQ(events[0].barrier_id(), "epoch");
  EXPECT_EQ(events[0].barrier_counter(), 0);
  EXPECT_EQ(TaskName(events[0].task()), "/job:worker/task:0");
  EXPECT_EQ(events[0].detail(), "2 participants, timeout 60000 ms");
  EXPECT_EQ(events[1].barrier_id(), "epoch");
  EXPECT_EQ(events[1].waiting_count(), 0);
}

TEST_F(CoordinatorEventsTest, Barrier_TimedOut_FailedNamingWhoWasMissing) {
  SpawnWithEvents(Config(3));
  Reports r0;
  ASSERT_THAT(Register("worker", 0, 10, Agent(&r0)), IsOk());
  proto::BarrierRequest barrier;
  barrier.set_barrier_id("epoch");
  barrier.set_barrier_timeout_in_ms(5'000);
  *barrier.mutable_source_task() = MakeTask("worker", 0);
  auto waiting = Send<proto::BarrierResponse>(leader_, barrier);
  AdvanceTime(5s);
  ASSERT_TRUE(waiting->has_value());
  std::vector<proto::JobEvent> events = EventsAfter(3);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind(), proto::BARRIER_FAILED);
  EXPECT_EQ(events[0].error_code(), static_cast<int>(Code::kDeadlineExceeded));
  EXPECT_EQ(events[0].waiting_count(), 3);
  ASSERT_EQ(events[0].waiting_for_size(), 3);
  EXPECT_EQ(TaskName(events[0].waiting_for(0)), "/job:ps/task:0");
  EXPECT_EQ(TaskName(events[0].waiting_for(1)), "/job:worker/task:1");
  EXPECT_EQ(TaskName(events[0].waiting_for(2)), "/job:worker/task:2");
}

TEST_F(CoordinatorEventsTest, StuckTask_TaskStuckWithItsStepThenFailed) {
  proto::CoordinationServiceConfig config = Config(3);
  config.set_heartbeat_timeout_in_ms(2'000);
  config.set_max_step_lag(10);
  SpawnWithEvents(config);
  std::vector<Reports> reports(3);
  for (int id = 0; id < 3; ++id) {
    ASSERT_THAT(Register("worker", id, 10 + id, Agent(&reports[id])), IsOk());
  }
  for (auto [id, step] : {std::pair{0, 100}, {1, 100}, {2, 80}}) {
    proto::HeartbeatRequest beat;
    *beat.mutable_source_task() = MakeTask("worker", id);
    beat.set_incarnation(10 + id);
    beat.set_step(step);
    ASSERT_THAT(Call<proto::HeartbeatResponse>(leader_, beat), IsOk());
  }
  AdvanceTime(300ms);
  std::vector<proto::JobEvent> events = EventsAfter(4);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0].kind(), proto::TASK_STUCK);
  EXPECT_EQ(TaskName(events[0].task()), "/job:worker/task:2");
  EXPECT_EQ(events[0].incarnation(), 12u);
  EXPECT_EQ(events[0].detail(), "step 80");
  EXPECT_EQ(events[0].error_code(), static_cast<int>(Code::kDeadlineExceeded));
  EXPECT_EQ(events[1].kind(), proto::TASK_FAILED);
}

TEST_F(CoordinatorEventsTest, Preemption_NoticedWithItsReason) {
  SpawnWithEvents(Config(1));
  Reports r0;
  ASSERT_THAT(Register("worker", 0, 10, Agent(&r0)), IsOk());
  proto::NotifyPreemptionRequest request;
  *request.mutable_source_task() = MakeTask("worker", 0);
  request.set_reason("spot instance reclaimed");
  ASSERT_THAT(Call<proto::NotifyPreemptionResponse>(leader_, request), IsOk());
  std::vector<proto::JobEvent> events = EventsAfter(2);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind(), proto::PREEMPTION_NOTICED);
  EXPECT_EQ(events[0].detail(), "spot instance reclaimed");
}

TEST_F(CoordinatorEventsTest, WatchThroughTheCoordinator_WaitsForTheNextEvent) {
  SpawnWithEvents(Config(1));
  proto::WatchEventsRequest request;
  request.set_after_seq(1);
  request.set_wait_ms(10'000);
  auto waiting = Send<proto::WatchEventsResponse>(leader_, request);
  EXPECT_FALSE(waiting->has_value());
  Reports r0;
  ASSERT_THAT(Register("worker", 0, 10, Agent(&r0)), IsOk());
  ASSERT_TRUE(waiting->has_value());
  ASSERT_THAT(**waiting, IsOk());
  ASSERT_EQ((**waiting)->events_size(), 1);
  EXPECT_EQ((**waiting)->events(0).kind(), proto::TASK_REGISTERED);
}

TEST_F(CoordinatorEventsTest, NoEventLog_WatchEventsAnswersWithNone) {
  Spawn(Config(1));
  Reports r0;
  ASSERT_THAT(Register("worker", 0, 10, Agent(&r0)), IsOk());
  auto reply = Call<proto::WatchEventsResponse>(leader_, proto::WatchEventsRequest());
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->events_size(), 0);
  EXPECT_EQ(reply->first_kept_seq(), 1);
  EXPECT_EQ(reply->last_seq(), 0);
}

}  // namespace
}  // namespace muster::testing
