// Registration, heartbeats, connection loss, reset and shutdown of tasks, on simulated time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <caf/send.hpp>

#include "muster/actors/tasks/heartbeat_monitor_actor.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "tests/actors/leader_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using ::testing::HasSubstr;
using Code = absl::StatusCode;

TEST_F(LeaderTest, Register_KnownTask_ConnectedWithLeaderIncarnation) {
  Spawn(Config(2));
  Reports reports;
  auto reply = Register("worker", 1, 5, Agent(&reports));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->leader_incarnation(), 77u);
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(State("worker", 1).incarnation(), 5u);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_DISCONNECTED);
}

TEST_F(LeaderTest, Register_SameIncarnationAgain_Ok) {
  Spawn(Config(2));
  Reports reports;
  auto agent = Agent(&reports);
  ASSERT_TRUE(Register("worker", 0, 5, agent).ok());
  EXPECT_THAT(Register("worker", 0, 5, agent), IsOk());
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
}

TEST_F(LeaderTest, Register_UnknownTask_InvalidArgumentAndNotPropagated) {
  Spawn(Config(2));
  Reports reports;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&reports)).ok());
  Reports unused;
  EXPECT_THAT(Register("worker", 2, 9, Agent(&unused)),
              StatusIs(Code::kInvalidArgument, HasSubstr("/job:worker/task:2")));
  EXPECT_THAT(Register("chief", 0, 9, Agent(&unused)),
              StatusIs(Code::kInvalidArgument, HasSubstr("/job:chief/task:0")));
  EXPECT_TRUE(reports->empty());
}

TEST_F(LeaderTest, Register_NewIncarnationWhileConnected_AbortedErrorAndPropagated) {
  Spawn(Config(2));
  Reports first, other;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&first)).ok());
  ASSERT_TRUE(Register("worker", 1, 6, Agent(&other)).ok());
  EXPECT_THAT(Register("worker", 0, 8, Agent(&first)),
              StatusIs(Code::kAborted, HasSubstr("different incarnation")));
  auto state = State("worker", 0);
  EXPECT_EQ(state.state(), proto::TASKSTATE_ERROR);
  EXPECT_EQ(state.error_code(), static_cast<int>(Code::kAborted));
  ASSERT_EQ(other->size(), 1u);
  EXPECT_EQ((*other)[0].error_code(), static_cast<int>(Code::kAborted));
  EXPECT_EQ(TaskName((*other)[0].error_payload().source_task()), "/job:worker/task:0");
}

TEST_F(LeaderTest, Register_WhileInError_AbortedUntilReset) {
  Spawn(Config(2));
  Reports reports;
  auto agent = Agent(&reports);
  ASSERT_TRUE(Register("worker", 0, 5, agent).ok());
  ASSERT_FALSE(Register("worker", 0, 8, agent).ok());
  EXPECT_THAT(Register("worker", 0, 8, agent),
              StatusIs(Code::kAborted,
                       HasSubstr("run `muster task reset --leader HOST:PORT /job:worker/task:0`")));
  EXPECT_THAT((TaskCall<proto::ResetTaskResponse, proto::ResetTaskRequest>("worker", 0)), IsOk());
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_DISCONNECTED);
  EXPECT_THAT(Register("worker", 0, 8, agent), IsOk());
  EXPECT_EQ(State("worker", 0).incarnation(), 8u);
}

// A claim (RegisterTaskRequest.claim) takes a free task, and only a free one.
TEST_F(LeaderTest, Claim_FreeTask_Connects) {
  Spawn(Config(2));
  Reports reports;
  EXPECT_THAT(Register("worker", 1, 5, Agent(&reports), /*claim=*/true), IsOk());
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(State("worker", 1).incarnation(), 5u);
}

TEST_F(LeaderTest, Claim_HeldTask_AlreadyExistsAndTheHolderKeepsIt) {
  Spawn(Config(2));
  Reports holder, other, claimer;
  auto agent = Agent(&holder);
  ASSERT_THAT(Register("worker", 0, 5, agent), IsOk());
  ASSERT_THAT(Register("worker", 1, 6, Agent(&other)), IsOk());
  EXPECT_THAT(Register("worker", 0, 8, Agent(&claimer), /*claim=*/true),
              StatusIs(Code::kAlreadyExists, HasSubstr("/job:worker/task:0 is held by "
                                                       "incarnation 5")));
  auto state = State("worker", 0);
  EXPECT_EQ(state.state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(state.incarnation(), 5u);
  EXPECT_TRUE(holder->empty());
  EXPECT_TRUE(other->empty());
  EXPECT_THAT(Heartbeat("worker", 0, 5), IsOk());
  // The holder's own incarnation claims again without harm.
  EXPECT_THAT(Register("worker", 0, 5, agent, /*claim=*/true), IsOk());
}

TEST_F(LeaderTest, Claim_TaskOfALostHolderInARecoverableJob_TakesIt) {
  auto config = Config(2);
  config.add_recoverable_jobs("worker");
  Spawn(config);
  Reports lost, claimer;
  auto agent = Agent(&lost);
  ASSERT_THAT(Register("worker", 0, 5, agent), IsOk());
  caf::anon_send_exit(agent, caf::exit_reason::kill);
  Drain();
  ASSERT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
  EXPECT_THAT(Register("worker", 0, 9, Agent(&claimer), /*claim=*/true), IsOk());
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(State("worker", 0).incarnation(), 9u);
}

TEST_F(LeaderTest, Reset_AlreadyDisconnected_FailedPrecondition) {
  Spawn(Config(1));
  EXPECT_THAT((TaskCall<proto::ResetTaskResponse, proto::ResetTaskRequest>("worker", 0)),
              StatusIs(Code::kFailedPrecondition, HasSubstr("already disconnected")));
}

TEST_F(LeaderTest, HeartbeatDeadline_HitExactlyAtTimeout) {
  Spawn(Config(1));
  Reports reports;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&reports)).ok());
  AdvanceTime(9999ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  AdvanceTime(1ms);
  auto state = State("worker", 0);
  EXPECT_EQ(state.state(), proto::TASKSTATE_ERROR);
  EXPECT_EQ(state.error_code(), static_cast<int>(Code::kUnavailable));
  EXPECT_THAT(state.error_message(), HasSubstr("/job:worker/task:0 heartbeat timeout"));
}

TEST_F(LeaderTest, Heartbeat_MovesTheDeadline) {
  Spawn(Config(1));
  Reports reports;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&reports)).ok());
  AdvanceTime(6s);
  ASSERT_THAT(Heartbeat("worker", 0, 5), IsOk());
  AdvanceTime(9999ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  AdvanceTime(1ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
}

// The leader's process did not run for two timeouts (stopped, or starved): its timer comes
// late, and the verdict waits a quarter timeout for the beats that waited meanwhile.
TEST_F(LeaderTest, HeartbeatDeadline_LeaderStalled_VerdictWaitsForTheBeatsThatWaited) {
  Spawn(Config(2));
  Reports first, second;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&first)).ok());
  ASSERT_TRUE(Register("worker", 1, 6, Agent(&second)).ok());
  Stall(30s);  // the timer due at 10 s fires at 30 s
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  EXPECT_TRUE(first->empty());
  ASSERT_THAT(Heartbeat("worker", 1, 6), IsOk());  // a beat that waited during the stall
  AdvanceTime(2499ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  AdvanceTime(1ms);  // a quarter timeout after the stall: task 0 sent nothing, task 1 did
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
  EXPECT_THAT(State("worker", 0).error_message(), HasSubstr("heartbeat timeout"));
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_CONNECTED);
}

// Late again right after the grace (the leader starved all along): judged then, not deferred
// again.
TEST_F(LeaderTest, HeartbeatDeadline_LateTwiceInARow_JudgedAfterOneGrace) {
  Spawn(Config(1));
  Reports reports;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&reports)).ok());
  Stall(30s);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  Stall(30s);  // the grace's timer, due at 32.5 s, fires at 60 s
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
}

TEST_F(LeaderTest, StaleTask_PropagatedWithSourceTask) {
  Spawn(Config(2));
  Reports stale, alive;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&stale)).ok());
  ASSERT_TRUE(Register("worker", 1, 6, Agent(&alive)).ok());
  AdvanceTime(6s);
  ASSERT_THAT(Heartbeat("worker", 1, 6), IsOk());
  AdvanceTime(4s);
  ASSERT_EQ(alive->size(), 1u);
  EXPECT_EQ((*alive)[0].error_code(), static_cast<int>(Code::kUnavailable));
  EXPECT_EQ(TaskName((*alive)[0].error_payload().source_task()), "/job:worker/task:0");
  EXPECT_TRUE(stale->empty());
}

TEST_F(LeaderTest, Heartbeat_ErrorsByState) {
  Spawn(Config(2));
  EXPECT_THAT(Heartbeat("worker", 7, 1), StatusIs(Code::kInvalidArgument, HasSubstr("task:7")));
  EXPECT_THAT(Heartbeat("worker", 0, 1),
              StatusIs(Code::kInvalidArgument, HasSubstr("must be registered")));
  Reports reports;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&reports)).ok());
  AdvanceTime(10s);
  EXPECT_THAT(Heartbeat("worker", 0, 5),
              StatusIs(Code::kAborted, HasSubstr("already-in-error task")));
}

TEST_F(LeaderTest, Heartbeat_WrongIncarnation_AbortedAndTaskFails) {
  Spawn(Config(2));
  Reports reports;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&reports)).ok());
  EXPECT_THAT(Heartbeat("worker", 0, 6),
              StatusIs(Code::kAborted, HasSubstr("Incarnation ID mismatch")));
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
}

proto::HeartbeatRequest Beat(const std::string& job, int id, uint64_t incarnation) {
  proto::HeartbeatRequest beat;
  *beat.mutable_source_task() = MakeTask(job, id);
  beat.set_incarnation(incarnation);
  return beat;
}

TEST_F(LeaderTest, HeartbeatBatch_EachBeatAnsweredLikeAHeartbeat) {
  Spawn(Config(3));
  Reports reports;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&reports)).ok());
  ASSERT_TRUE(Register("worker", 1, 6, Agent(&reports)).ok());
  proto::HeartbeatBatchRequest batch;
  *batch.add_beats() = Beat("worker", 0, 5);  // accepted
  *batch.add_beats() = Beat("worker", 9, 1);  // unknown task
  *batch.add_beats() = Beat("worker", 2, 1);  // never registered
  *batch.add_beats() = Beat("worker", 1, 7);  // restarted: the task fails
  auto reply = Call<proto::HeartbeatBatchResponse>(leader_, batch);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->leader_incarnation(), 77u);
  ASSERT_EQ(reply->failures_size(), 3);  // beat 0 was accepted
  EXPECT_EQ(reply->failures(0).index(), 1);
  EXPECT_EQ(TaskName(reply->failures(0).task()), "/job:worker/task:9");
  EXPECT_THAT(StatusFromFields(reply->failures(0)),
              StatusIs(Code::kInvalidArgument, HasSubstr("/job:worker/task:9")));
  EXPECT_EQ(reply->failures(1).index(), 2);
  EXPECT_THAT(StatusFromFields(reply->failures(1)),
              StatusIs(Code::kInvalidArgument, HasSubstr("must be registered")));
  EXPECT_EQ(reply->failures(2).index(), 3);
  EXPECT_THAT(StatusFromFields(reply->failures(2)),
              StatusIs(Code::kAborted, HasSubstr("Incarnation ID mismatch")));
  EXPECT_TRUE(GetCoordinationError(StatusFromFields(reply->failures(2))).has_value());
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_ERROR);
}

TEST_F(LeaderTest, HeartbeatBatch_MovesEveryDeadline) {
  Spawn(Config(2));
  Reports reports;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&reports)).ok());
  ASSERT_TRUE(Register("worker", 1, 6, Agent(&reports)).ok());
  AdvanceTime(6s);
  proto::HeartbeatBatchRequest batch;
  *batch.add_beats() = Beat("worker", 0, 5);
  *batch.add_beats() = Beat("worker", 1, 6);
  ASSERT_TRUE(Call<proto::HeartbeatBatchResponse>(leader_, batch).ok());
  AdvanceTime(9999ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_CONNECTED);
  AdvanceTime(1ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_ERROR);
}

// What the sender of one-way heartbeats receives from the leader.
struct BeaterLog {
  int responses = 0;
  std::vector<proto::ReportErrorToTaskRequest> reports;
  std::vector<caf::error> errors;  // error messages sent to it as such
};

class OneWayHeartbeatTest : public LeaderTest {
 protected:
  void SetUp() override {
    beater_ = Keep(system_.spawn([log = log_](caf::event_based_actor* self) -> caf::behavior {
      self->set_error_handler([log](caf::error& error) { log->errors.push_back(error); });
      return {[log](const proto::HeartbeatResponse&) { ++log->responses; },
              [log](const proto::ReportErrorToTaskRequest& r) { log->reports.push_back(r); }};
    }));
  }

  // Sends a heartbeat as a one-way message (not a request), as agents with
  // AgentConfig::one_way_heartbeats do.
  void BeatOneWay(const std::string& job, int id, uint64_t incarnation) {
    caf::send_as(beater_, caf::actor_cast<caf::actor>(leader_), Beat(job, id, incarnation));
    Drain();
  }

  std::shared_ptr<BeaterLog> log_ = std::make_shared<BeaterLog>();
  caf::actor beater_;
};

TEST_F(OneWayHeartbeatTest, MovesTheDeadlineAndNothingIsSentBack) {
  Spawn(Config(1));
  Reports reports;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&reports)).ok());
  AdvanceTime(6s);
  BeatOneWay("worker", 0, 5);
  AdvanceTime(9999ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  AdvanceTime(1ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
  EXPECT_EQ(log_->responses, 0);
  EXPECT_TRUE(log_->reports.empty());
  EXPECT_TRUE(log_->errors.empty());
}

TEST_F(OneWayHeartbeatTest, ErrorsArePushedToTheSenderWithTheCodesOfTheRequest) {
  Spawn(Config(2));
  BeatOneWay("worker", 7, 1);
  BeatOneWay("worker", 0, 1);
  Reports reports;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&reports)).ok());
  AdvanceTime(10s);
  BeatOneWay("worker", 0, 5);
  ASSERT_TRUE(Register("worker", 1, 8, Agent(&reports)).ok());
  BeatOneWay("worker", 1, 9);
  ASSERT_EQ(log_->reports.size(), 4u);
  const auto& reported = log_->reports;
  EXPECT_EQ(reported[0].error_code(), static_cast<int>(Code::kInvalidArgument));
  EXPECT_THAT(reported[0].error_message(), HasSubstr("task:7"));
  EXPECT_EQ(reported[1].error_code(), static_cast<int>(Code::kInvalidArgument));
  EXPECT_THAT(reported[1].error_message(), HasSubstr("must be registered"));
  EXPECT_EQ(reported[2].error_code(), static_cast<int>(Code::kAborted));
  EXPECT_THAT(reported[2].error_message(), HasSubstr("already-in-error task"));
  EXPECT_EQ(TaskName(reported[2].error_payload().source_task()), "/job:worker/task:0");
  EXPECT_EQ(reported[3].error_code(), static_cast<int>(Code::kAborted));
  EXPECT_THAT(reported[3].error_message(), HasSubstr("Incarnation ID mismatch"));
  EXPECT_EQ(TaskName(reported[3].error_payload().source_task()), "/job:worker/task:1");
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_ERROR);
  EXPECT_EQ(log_->responses, 0);
  EXPECT_TRUE(log_->errors.empty());
}

TEST_F(OneWayHeartbeatTest, TaskActorGoneMeanwhile_NothingPushed) {
  auto monitor = std::make_shared<HeartbeatMonitorActor>();
  Keep(system_.spawn([monitor](caf::event_based_actor* self) -> caf::behavior {
    *monitor = SpawnHeartbeatMonitor(self, 77, 10s);
    return {[](int) {}};
  }));
  auto gone = system_.spawn([](caf::event_based_actor*) -> caf::behavior { return {[](int) {}}; });
  Drain();
  caf::anon_send_exit(gone, caf::exit_reason::kill);
  Drain();
  // A beat of a slot without a deadline goes to its task actor, which has just died (its
  // replacement is not in the slot yet): the transport error is not the task's to hear.
  caf::send_as(beater_, caf::actor_cast<caf::actor>(*monitor), Beat("worker", 0, 5), uint32_t{0},
               caf::actor_cast<TaskActor>(gone), caf::actor_cast<AgentActor>(beater_));
  Drain();
  EXPECT_TRUE(log_->reports.empty());
  EXPECT_TRUE(log_->errors.empty());
  EXPECT_EQ(log_->responses, 0);
}

TEST_F(LeaderTest, ErrorMessageOfItsOwn_DroppedTheCoordinatorStaysUp) {
  Spawn(Config(1));
  caf::anon_send(caf::actor_cast<caf::actor>(leader_), ToError(absl::InternalError("boom")));
  Drain();
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_DISCONNECTED);  // it still answers
}

TEST_F(LeaderTest, HeartbeatDeadline_ReRegisterRestartsTheDeadline) {
  Spawn(Config(1));
  Reports reports;
  auto agent = Agent(&reports);
  ASSERT_TRUE(Register("worker", 0, 5, agent).ok());
  AdvanceTime(8s);
  ASSERT_TRUE(Register("worker", 0, 5, agent).ok());
  AdvanceTime(9999ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  AdvanceTime(1ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
}

TEST_F(LeaderTest, HeartbeatDeadline_NotWatchedAfterShutdown) {
  Spawn(Config(1));
  Reports reports;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&reports)).ok());
  ASSERT_THAT((TaskCall<proto::ShutdownTaskResponse, proto::ShutdownTaskRequest>("worker", 0)),
              IsOk());
  AdvanceTime(1h);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_DISCONNECTED);
}

TEST_F(LeaderTest, Heartbeat_AfterShutdown_AcceptedForGracePeriodOnly) {
  Spawn(Config(1));
  Reports reports;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&reports)).ok());
  ASSERT_THAT((TaskCall<proto::ShutdownTaskResponse, proto::ShutdownTaskRequest>("worker", 0)),
              IsOk());
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_DISCONNECTED);
  AdvanceTime(10s);
  EXPECT_THAT(Heartbeat("worker", 0, 5), IsOk());
  AdvanceTime(1ms);
  EXPECT_THAT(Heartbeat("worker", 0, 5),
              StatusIs(Code::kInvalidArgument, HasSubstr("must be registered")));
}

TEST_F(LeaderTest, AgentDies_TaskFailsAtOnceWithConnectionLost) {
  Spawn(Config(2));
  Reports dying, alive;
  auto agent = Agent(&dying);
  ASSERT_TRUE(Register("worker", 0, 5, agent).ok());
  ASSERT_TRUE(Register("worker", 1, 6, Agent(&alive)).ok());
  caf::anon_send_exit(agent, caf::exit_reason::kill);
  Drain();
  auto state = State("worker", 0);
  EXPECT_EQ(state.state(), proto::TASKSTATE_ERROR);
  EXPECT_EQ(state.error_code(), static_cast<int>(Code::kUnavailable));
  EXPECT_THAT(state.error_message(), HasSubstr("connection to worker lost"));
  ASSERT_EQ(alive->size(), 1u);
}

// A leader whose tasks tolerate a lost agent for 2 s (connection_loss_grace_period_in_ms).
class GraceTest : public LeaderTest {
 protected:
  void SetUp() override {
    auto config = Config(1);
    config.set_connection_loss_grace_period_in_ms(2000);
    Spawn(config);
  }
  // Registers worker/0 (incarnation 5) with a new agent, then kills that agent.
  void RegisterAndLoseAgent() {
    auto agent = Agent(&reports_);
    ASSERT_THAT(Register("worker", 0, 5, agent), IsOk());
    caf::anon_send_exit(agent, caf::exit_reason::kill);
    Drain();
  }
  Reports reports_;
};

TEST_F(GraceTest, AgentDies_FailsOnlyAfterTheGracePeriod) {
  RegisterAndLoseAgent();
  AdvanceTime(1999ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  AdvanceTime(1ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
}

TEST_F(GraceTest, AgentDies_ReconnectsWithinGrace_StaysConnected) {
  RegisterAndLoseAgent();
  AdvanceTime(1s);
  ASSERT_THAT(Register("worker", 0, 5, Agent(&reports_)), IsOk());
  AdvanceTime(1500ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
}

// The first loss's timer names the agent it was for: when the agent that replaced it is lost
// too, the task gets a whole grace period from that second loss.
TEST_F(GraceTest, AgentDiesAgainWithinGrace_FailsAGraceAfterTheSecondLoss) {
  RegisterAndLoseAgent();
  AdvanceTime(1s);
  RegisterAndLoseAgent();  // the same incarnation, from a new agent
  AdvanceTime(1999ms);     // 3 s after the first loss, 1.999 s after the second
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  AdvanceTime(1ms);
  auto state = State("worker", 0);
  EXPECT_EQ(state.state(), proto::TASKSTATE_ERROR);
  EXPECT_THAT(state.error_message(), HasSubstr("connection to worker lost"));
}

TEST_F(LeaderTest, ReportErrorToService_ErrorWithReportedPayloadPropagated) {
  Spawn(Config(2));
  Reports reporter, other;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&reporter)).ok());
  ASSERT_TRUE(Register("worker", 1, 6, Agent(&other)).ok());
  proto::ReportErrorToServiceRequest report;
  report.set_error_code(static_cast<int>(Code::kDataLoss));
  report.set_error_message("disk on fire");
  *report.mutable_error_origin() = MakeTask("worker", 0);
  EXPECT_THAT(Call<proto::ReportErrorToServiceResponse>(leader_, report), IsOk());
  auto state = State("worker", 0);
  EXPECT_EQ(state.state(), proto::TASKSTATE_ERROR);
  EXPECT_EQ(state.error_message(), "disk on fire");
  EXPECT_TRUE(state.error_payload().is_reported_error());
  ASSERT_EQ(other->size(), 1u);
  EXPECT_EQ((*other)[0].error_code(), static_cast<int>(Code::kDataLoss));
  EXPECT_TRUE((*other)[0].error_payload().is_reported_error());
  EXPECT_THAT(Call<proto::ReportErrorToServiceResponse>(leader_, report),
              StatusIs(Code::kFailedPrecondition));
}

// An agent is in ERROR after its first pushed error and would ignore more: when many tasks
// fail, each agent is told once (not once per failed task) until it connects again.
TEST_F(LeaderTest, TwoFailures_EachAgentToldOnceUntilItConnectsAgain) {
  Spawn(Config(3));
  Reports r0, r1, r2;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&r0)).ok());
  ASSERT_TRUE(Register("worker", 1, 6, Agent(&r1)).ok());
  auto survivor = Agent(&r2);
  ASSERT_TRUE(Register("worker", 2, 7, survivor).ok());
  for (int failed : {0, 1}) {
    proto::ReportErrorToServiceRequest report;
    report.set_error_code(static_cast<int>(failed == 0 ? Code::kDataLoss : Code::kInternal));
    report.set_error_message("disk on fire");
    *report.mutable_error_origin() = MakeTask("worker", failed);
    ASSERT_THAT(Call<proto::ReportErrorToServiceResponse>(leader_, report), IsOk());
  }
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_ERROR);
  ASSERT_EQ(r2->size(), 1u);
  EXPECT_EQ((*r2)[0].error_code(), static_cast<int>(Code::kDataLoss));
  EXPECT_EQ(TaskName((*r2)[0].error_payload().source_task()), "/job:worker/task:0");
  ASSERT_EQ(r1->size(), 1u);  // task 0's, before its own
  EXPECT_TRUE(r0->empty());   // in ERROR at the leader: no longer connected
  // Reset and connected again, the survivor's agent is told the cluster's error anew.
  ASSERT_THAT((TaskCall<proto::ResetTaskResponse, proto::ResetTaskRequest>("worker", 2)), IsOk());
  ASSERT_THAT(Register("worker", 2, 8, survivor), IsOk());
  ASSERT_EQ(r2->size(), 2u);
  EXPECT_EQ((*r2)[1].error_code(), static_cast<int>(Code::kInternal));
}

TEST_F(LeaderTest, LateAgent_LearnsEarlierClusterErrorWhenItConnects) {
  Spawn(Config(2));
  Reports first, late;
  ASSERT_TRUE(Register("worker", 0, 5, Agent(&first)).ok());
  AdvanceTime(10s);
  ASSERT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
  ASSERT_TRUE(Register("worker", 1, 6, Agent(&late)).ok());
  ASSERT_EQ(late->size(), 1u);
  EXPECT_EQ(TaskName((*late)[0].error_payload().source_task()), "/job:worker/task:0");
}

}  // namespace
}  // namespace muster::testing
