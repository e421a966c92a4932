// Barriers behind the coordinator: the register barrier, the shutdown barrier, and a user
// barrier that fails when a participant's task fails, all on simulated time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/status/status_codec.h"
#include "tests/actors/leader_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using ::testing::HasSubstr;
using Code = absl::StatusCode;

class ServiceBarrierTest : public LeaderTest {
 protected:
  Reply<proto::RegisterTaskResponse> SendRegister(const std::string& job, int id, uint64_t inc,
                                                  bool claim = false) {
    proto::RegisterTaskRequest request;
    *request.mutable_source_task() = MakeTask(job, id);
    request.set_incarnation(inc);
    request.set_claim(claim);
    return Send<proto::RegisterTaskResponse>(leader_, request, Agent(&r_));
  }
  Reply<proto::ShutdownTaskResponse> SendShutdown(const std::string& job, int id) {
    proto::ShutdownTaskRequest request;
    *request.mutable_source_task() = MakeTask(job, id);
    return Send<proto::ShutdownTaskResponse>(leader_, request);
  }
  Reports r_;
};

TEST_F(ServiceBarrierTest, RegisterBarrier_RepliesOnlyWhenEveryTaskRegistered) {
  auto config = Config(2);
  config.set_cluster_register_with_barrier(true);
  config.set_cluster_register_timeout_in_ms(60'000);
  Spawn(config);
  auto w0 = SendRegister("worker", 0, 1);
  auto w1 = SendRegister("worker", 1, 2);
  EXPECT_FALSE(w0->has_value()) << (w0->has_value() ? (*w0)->status().ToString() : "");
  auto ps = SendRegister("ps", 0, 3);
  ASSERT_TRUE(w0->has_value() && w1->has_value() && ps->has_value());
  EXPECT_THAT(**w0, IsOk());
  EXPECT_EQ((*w1)->value().leader_incarnation(), 77u);
}

// A claim of a task whose registration waits in the register barrier is refused; the waiting
// one keeps its place (a plain registration would replace it).
TEST_F(ServiceBarrierTest, RegisterBarrier_ClaimOfAWaitingTask_AlreadyExistsAndItStillPasses) {
  auto config = Config(1);
  config.set_cluster_register_with_barrier(true);
  config.set_cluster_register_timeout_in_ms(60'000);
  Spawn(config);
  auto w0 = SendRegister("worker", 0, 1);
  auto claim = SendRegister("worker", 0, 2, /*claim=*/true);
  ASSERT_TRUE(claim->has_value());
  EXPECT_THAT(**claim, StatusIs(Code::kAlreadyExists, HasSubstr("held by incarnation 1")));
  EXPECT_FALSE(w0->has_value());
  auto ps = SendRegister("ps", 0, 3);
  ASSERT_TRUE(w0->has_value() && ps->has_value());
  EXPECT_THAT(**w0, IsOk());
  EXPECT_EQ(State("worker", 0).incarnation(), 1u);
}

TEST_F(ServiceBarrierTest, RegisterBarrierTimeout_NamesEveryMissingTaskAndFailsAll) {
  auto config = Config(12);
  config.set_cluster_register_with_barrier(true);
  config.set_cluster_register_timeout_in_ms(5'000);
  config.set_heartbeat_timeout_in_ms(60'000);
  Spawn(config);
  auto w0 = SendRegister("worker", 0, 1);
  for (int id : {1, 2, 4, 5, 6}) SendRegister("worker", id, 10 + id);
  AdvanceTime(5s);
  ASSERT_TRUE(w0->has_value());
  EXPECT_THAT(**w0, StatusIs(Code::kDeadlineExceeded, HasSubstr("ps/0, worker/[3,7-11]")));
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
  EXPECT_THAT(State("worker", 3).error_message(), HasSubstr("Cluster registration failed"));
  EXPECT_THAT(Register("worker", 3, 99, Agent(&r_)),
              StatusIs(Code::kDeadlineExceeded, HasSubstr("ps/0, worker/[3,7-11]")));
}

TEST_F(ServiceBarrierTest, RegisterBarrierLongerThanHeartbeatTimeout_EarlyTasksStayHealthy) {
  auto config = Config(1);
  config.set_cluster_register_with_barrier(true);
  config.set_cluster_register_timeout_in_ms(60'000);
  config.set_heartbeat_timeout_in_ms(1'000);
  Spawn(config);
  auto w0 = SendRegister("worker", 0, 1);
  AdvanceTime(3s);  // three heartbeat timeouts without a beat: the task is still joining
  EXPECT_FALSE(w0->has_value());
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_DISCONNECTED);
  auto ps = SendRegister("ps", 0, 2);
  ASSERT_TRUE(w0->has_value() && ps->has_value());
  EXPECT_THAT(**w0, IsOk());
  EXPECT_THAT(**ps, IsOk());
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(State("worker", 0).incarnation(), 1u);
  // The heartbeat clock starts when the barrier passes.
  AdvanceTime(900ms);
  EXPECT_THAT(Heartbeat("worker", 0, 1), IsOk());
  EXPECT_THAT(Heartbeat("ps", 0, 2), IsOk());
  AdvanceTime(900ms);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  EXPECT_TRUE(r_->empty());
}

TEST_F(ServiceBarrierTest, RegisterBarrierNewIncarnationWhileWaiting_OldAlreadyExistsNewJoins) {
  auto config = Config(2);
  config.set_cluster_register_with_barrier(true);
  config.set_cluster_register_timeout_in_ms(60'000);
  Spawn(config);
  Reports others;
  proto::RegisterTaskRequest ps_request;
  *ps_request.mutable_source_task() = MakeTask("ps", 0);
  ps_request.set_incarnation(7);
  auto ps = Send<proto::RegisterTaskResponse>(leader_, ps_request, Agent(&others));
  auto old = SendRegister("worker", 0, 1);
  auto restarted = SendRegister("worker", 0, 2);
  ASSERT_TRUE(old->has_value());
  EXPECT_THAT(**old, StatusIs(Code::kAlreadyExists, HasSubstr("newer incarnation")));
  EXPECT_FALSE(restarted->has_value());
  EXPECT_FALSE(ps->has_value());
  auto w1 = SendRegister("worker", 1, 3);
  ASSERT_TRUE(restarted->has_value() && ps->has_value() && w1->has_value());
  EXPECT_THAT(**restarted, IsOk());
  EXPECT_THAT(**ps, IsOk());
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(State("worker", 0).incarnation(), 2u);
  EXPECT_TRUE(others->empty());
}

TEST_F(ServiceBarrierTest, RegisterBarrierAgentLostWhileWaiting_TaskFailsWhenBarrierPasses) {
  auto config = Config(1);
  config.set_cluster_register_with_barrier(true);
  config.set_cluster_register_timeout_in_ms(60'000);
  Spawn(config);
  Reports lost_reports;
  AgentActor lost = Agent(&lost_reports);
  proto::RegisterTaskRequest request;
  *request.mutable_source_task() = MakeTask("worker", 0);
  request.set_incarnation(1);
  auto w0 = Send<proto::RegisterTaskResponse>(leader_, request, lost);
  caf::anon_send_exit(lost, caf::exit_reason::kill);
  Drain();
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_DISCONNECTED);
  SendRegister("worker", 1, 2);
  auto ps = SendRegister("ps", 0, 3);
  ASSERT_TRUE(ps->has_value());
  EXPECT_THAT(**ps, IsOk());
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
  EXPECT_THAT(State("worker", 0).error_message(), HasSubstr("connection to worker lost"));
}

// A task that fails while it waits in the register barrier (its launcher saw its process exit):
// the waiting call is answered at once with why, not when the barrier ends.
TEST_F(ServiceBarrierTest, RegisterBarrierTaskFailsWhileWaiting_CallerAbortedAtOnce) {
  auto config = Config(1);
  config.set_cluster_register_with_barrier(true);
  config.set_cluster_register_timeout_in_ms(60'000);
  Spawn(config);
  auto launcher = Keep(system_.spawn(
      []() -> LauncherActor::behavior_type { return {[](const proto::SupervisionEvent&) {}}; }));
  proto::RegisterLauncherRequest launch;
  launch.set_host("host-a");
  *launch.add_tasks() = MakeTask("worker", 0);
  auto launched = Call<proto::RegisterLauncherResponse>(leader_, launch, launcher);
  ASSERT_THAT(launched, IsOk());
  auto w0 = SendRegister("worker", 0, 1);
  EXPECT_FALSE(w0->has_value());
  proto::TaskExitedRequest exited;
  *exited.mutable_task() = MakeTask("worker", 0);
  exited.set_generation(launched->generations(0));
  exited.set_exit_code(3);
  ASSERT_THAT(Call<proto::TaskExitedResponse>(leader_, exited), IsOk());
  ASSERT_TRUE(w0->has_value());
  EXPECT_THAT(**w0, StatusIs(Code::kAborted,
                             HasSubstr("worker/task:0 failed while it waited for the register "
                                       "barrier: UNAVAILABLE")));
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
}

TEST_F(ServiceBarrierTest, ShutdownBarrier_AllArrive_AllDisconnectTogether) {
  auto config = Config(1);
  config.set_shutdown_barrier_timeout_in_ms(10'000);
  Spawn(config);
  ASSERT_TRUE(Register("worker", 0, 1, Agent(&r_)).ok());
  ASSERT_TRUE(Register("ps", 0, 2, Agent(&r_)).ok());
  auto w0 = SendShutdown("worker", 0);
  EXPECT_FALSE(w0->has_value());
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  auto ps = SendShutdown("ps", 0);
  ASSERT_TRUE(w0->has_value() && ps->has_value());
  EXPECT_THAT(**w0, IsOk());
  EXPECT_THAT(**ps, IsOk());
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_DISCONNECTED);
  EXPECT_EQ(State("ps", 0).state(), proto::TASKSTATE_DISCONNECTED);
}

TEST_F(ServiceBarrierTest, ShutdownBarrierTimeout_InternalNamingStragglerAndAllInError) {
  auto config = Config(1);
  config.set_shutdown_barrier_timeout_in_ms(3'000);
  config.set_heartbeat_timeout_in_ms(60'000);
  Spawn(config);
  Reports straggler;
  ASSERT_TRUE(Register("worker", 0, 1, Agent(&r_)).ok());
  ASSERT_TRUE(Register("ps", 0, 2, Agent(&straggler)).ok());
  auto w0 = SendShutdown("worker", 0);
  AdvanceTime(3s);
  ASSERT_TRUE(w0->has_value());
  EXPECT_THAT(**w0, StatusIs(Code::kInternal, HasSubstr("Shutdown barrier has failed")));
  EXPECT_THAT(**w0, StatusIs(Code::kInternal, HasSubstr("ps/0")));
  EXPECT_EQ(State("ps", 0).state(), proto::TASKSTATE_ERROR);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
  ASSERT_FALSE(straggler->empty());
  EXPECT_THAT(straggler->back().error_message(), HasSubstr("Shutdown barrier has failed"));
  // The pushed error names the task that never arrived as its source; the task that waited
  // learns the failure from its reply only.
  EXPECT_THAT(straggler->back().error_message(), HasSubstr("1 task(s) did not reach it (ps/0)"));
  EXPECT_EQ(TaskName(straggler->back().error_payload().source_task()), "/job:ps/task:0");
  EXPECT_TRUE(r_->empty());
}

TEST_F(ServiceBarrierTest, UserBarrier_ParticipantFailsWhileWaiting_InternalNamingIt) {
  Spawn(Config(2));
  ASSERT_TRUE(Register("worker", 0, 1, Agent(&r_)).ok());
  ASSERT_TRUE(Register("worker", 1, 2, Agent(&r_)).ok());
  proto::BarrierRequest barrier;
  barrier.set_barrier_id("step");
  barrier.set_barrier_timeout_in_ms(60'000);
  *barrier.add_tasks() = MakeTask("worker", 0);
  *barrier.add_tasks() = MakeTask("worker", 1);
  *barrier.mutable_source_task() = MakeTask("worker", 0);
  auto waiting = Send<proto::BarrierResponse>(leader_, barrier);
  EXPECT_FALSE(waiting->has_value());
  proto::ReportErrorToServiceRequest report;
  report.set_error_code(static_cast<int>(Code::kInternal));
  report.set_error_message("crash");
  *report.mutable_error_origin() = MakeTask("worker", 1);
  ASSERT_THAT(Call<proto::ReportErrorToServiceResponse>(leader_, report), IsOk());
  ASSERT_TRUE(waiting->has_value());
  EXPECT_THAT(**waiting, StatusIs(Code::kInternal, HasSubstr("/job:worker/task:1")));
  auto open = Call<proto::GetBarriersResponse>(leader_, proto::GetBarriersRequest{});
  ASSERT_THAT(open, IsOk());
  EXPECT_EQ(open->barriers_size(), 0);
}

proto::BarrierGroupRequest Group(const std::string& id, int64_t timeout_ms,
                                 const std::vector<int>& participants,
                                 const std::vector<int>& sources) {
  proto::BarrierGroupRequest group;
  group.mutable_request()->set_barrier_id(id);
  group.mutable_request()->set_barrier_timeout_in_ms(timeout_ms);
  for (int task : participants) *group.mutable_request()->add_tasks() = MakeTask("worker", task);
  for (int task : sources) *group.add_sources() = MakeTask("worker", task);
  return group;
}

TEST_F(ServiceBarrierTest, BarrierGroup_OneReplyWhenTheBarrierPasses) {
  Spawn(Config(3));
  auto group = Send<proto::BarrierGroupResponse>(leader_, Group("step", 60'000, {0, 1, 2}, {0, 1}));
  EXPECT_FALSE(group->has_value());
  proto::BarrierRequest last = Group("step", 60'000, {0, 1, 2}, {}).request();
  *last.mutable_source_task() = MakeTask("worker", 2);
  ASSERT_THAT(Call<proto::BarrierResponse>(leader_, last), IsOk());
  ASSERT_TRUE(group->has_value());
  ASSERT_THAT(**group, IsOk());
  EXPECT_EQ((**group)->counter(), 0);
  EXPECT_EQ((**group)->failures_size(), 0);
}

// As with single calls, a non-participant's call fails the instance for every caller.
TEST_F(ServiceBarrierTest, BarrierGroup_NonParticipantSource_EverySourceGetsTheFailure) {
  Spawn(Config(2));
  auto reply = Call<proto::BarrierGroupResponse>(leader_, Group("step", 60'000, {0, 1}, {0, 7, 1}));
  ASSERT_THAT(reply, IsOk());
  ASSERT_EQ(reply->failures_size(), 3);
  for (int i = 0; i < 3; ++i) {
    const auto& failure = reply->failures(i);
    EXPECT_EQ(failure.index(), i);
    EXPECT_THAT(StatusFromFields(failure),
                StatusIs(Code::kInvalidArgument, HasSubstr("non-participating task "
                                                           "(/job:worker/task:7)")));
  }
  EXPECT_EQ(TaskName(reply->failures(1).task()), "/job:worker/task:7");
}

TEST_F(ServiceBarrierTest, BarrierGroup_TimeoutNamesTheMissingTaskForEverySource) {
  Spawn(Config(3));
  auto group = Send<proto::BarrierGroupResponse>(leader_, Group("step", 5'000, {0, 1, 2}, {0, 1}));
  AdvanceTime(5s);
  ASSERT_TRUE(group->has_value());
  ASSERT_THAT(**group, IsOk());
  ASSERT_EQ((**group)->failures_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const auto& failure = (**group)->failures(i);
    EXPECT_EQ(failure.index(), i);
    EXPECT_THAT(StatusFromFields(failure),
                StatusIs(Code::kDeadlineExceeded, HasSubstr("worker/2")));
    EXPECT_EQ(failure.barrier_counter(), 0);
  }
}

TEST_F(ServiceBarrierTest, GetBarriers_ListsWhoIsMissing) {
  Spawn(Config(3));
  for (int id = 0; id < 3; ++id) ASSERT_TRUE(Register("worker", id, id + 1, Agent(&r_)).ok());
  proto::BarrierRequest barrier;
  barrier.set_barrier_id("ckpt");
  barrier.set_barrier_timeout_in_ms(60'000);
  for (int id = 0; id < 3; ++id) *barrier.add_tasks() = MakeTask("worker", id);
  *barrier.mutable_source_task() = MakeTask("worker", 1);
  Send<proto::BarrierResponse>(leader_, barrier);
  auto open = Call<proto::GetBarriersResponse>(leader_, proto::GetBarriersRequest{});
  ASSERT_THAT(open, IsOk());
  ASSERT_EQ(open->barriers_size(), 1);
  EXPECT_EQ(open->barriers(0).barrier_id(), "ckpt");
  EXPECT_EQ(open->barriers(0).arrived(), 1);
  EXPECT_EQ(open->barriers(0).waiting_for_size(), 2);
}

}  // namespace
}  // namespace muster::testing
