// The coordinator and its launchers, on simulated time: registration, exits reported by a
// launcher, and the restarts a supervision policy orders (one task, or every task as a new round).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/actors/supervision/supervision_policy.h"
#include "muster/messages/status/status_codec.h"
#include "tests/actors/durability/fake_state_writer.h"
#include "tests/actors/leader_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using ::testing::HasSubstr;
using Code = absl::StatusCode;

class LauncherTest : public LeaderTest {
 protected:
  // How far ahead of the recorded generation a rejoining launcher's process may be.
  static constexpr int64_t kMaxLead = 16;

  using Events = std::shared_ptr<std::vector<proto::SupervisionEvent>>;

  // A launcher that records every event the coordinator sends it.
  LauncherActor Launcher(Events* events) {
    *events = std::make_shared<std::vector<proto::SupervisionEvent>>();
    auto sink = *events;
    return Keep(system_.spawn([sink]() -> LauncherActor::behavior_type {
      return {[sink](const proto::SupervisionEvent& e) { sink->push_back(e); }};
    }));
  }

  // A coordinator that records its state (a durable or HA leader), on a fake disk.
  void SpawnDurable(proto::CoordinationServiceConfig config) {
    auto writer = Keep(system_.spawn(FakeWriter, std::make_shared<FakeDisk>()));
    CoordinatorOptions options{.config = std::move(config), .incarnation = 77};
    options.state_writer = caf::actor_cast<StateWriterActor>(writer);
    leader_ = Keep(SpawnCoordinator(system_, std::move(options)));
    Drain();
  }

  absl::StatusOr<proto::RegisterLauncherResponse> RegisterLauncher(
      const LauncherActor& launcher, const std::vector<proto::CoordinatedTask>& tasks) {
    proto::RegisterLauncherRequest request;
    request.set_host("host-a");
    for (const auto& task : tasks) *request.add_tasks() = task;
    return Call<proto::RegisterLauncherResponse>(leader_, request, launcher);
  }

  absl::StatusOr<proto::TaskExitedResponse> Exited(int id, int64_t generation, int code,
                                                   int signal = 0) {
    proto::TaskExitedRequest request;
    *request.mutable_task() = MakeTask("worker", id);
    request.set_generation(generation);
    request.set_exit_code(code);
    request.set_signal(signal);
    return Call<proto::TaskExitedResponse>(leader_, request);
  }

  void ReportError(int id) {
    proto::ReportErrorToServiceRequest report;
    report.set_error_code(static_cast<int>(Code::kInternal));
    report.set_error_message("out of memory");
    *report.mutable_error_origin() = MakeTask("worker", id);
    ASSERT_THAT(Call<proto::ReportErrorToServiceResponse>(leader_, report), IsOk());
  }

  // One launcher runs worker/0 and worker/1, which connect (incarnations 10 and 11).
  void LaunchAndConnectTwoWorkers(Events* events, Reports* r0, Reports* r1) {
    ASSERT_THAT(RegisterLauncher(Launcher(events), Workers(2)), IsOk());
    ASSERT_THAT(Register("worker", 0, 10, Agent(r0)), IsOk());
    ASSERT_THAT(Register("worker", 1, 11, Agent(r1)), IsOk());
  }

  static std::vector<proto::CoordinatedTask> Workers(int n) {
    std::vector<proto::CoordinatedTask> tasks;
    for (int i = 0; i < n; ++i) tasks.push_back(MakeTask("worker", i));
    return tasks;
  }
};

TEST_F(LauncherTest, Register_ReturnsGenerationsRoundAndTheCluster) {
  Spawn(Config(2));
  Events events;
  auto reply = RegisterLauncher(Launcher(&events), Workers(2));
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->leader_incarnation(), 77u);
  EXPECT_THAT(reply->generations(), ::testing::ElementsAre(0, 0));
  EXPECT_EQ(reply->round(), 0);
  ASSERT_EQ(reply->cluster_size(), 3);
  EXPECT_EQ(TaskName(reply->cluster(0)), "/job:ps/task:0");  // job names in order, then ids
  EXPECT_EQ(TaskName(reply->cluster(2)), "/job:worker/task:1");
}

TEST_F(LauncherTest, Register_NoUnknownDuplicateOrTakenTasks_RefusedNothingRecorded) {
  Spawn(Config(2));
  Events events;
  auto first = Launcher(&events);
  EXPECT_THAT(RegisterLauncher(first, {}), StatusIs(Code::kInvalidArgument, HasSubstr("no tasks")));
  EXPECT_THAT(RegisterLauncher(first, {MakeTask("worker", 5)}),
              StatusIs(Code::kInvalidArgument, HasSubstr("/job:worker/task:5")));
  EXPECT_THAT(RegisterLauncher(first, {MakeTask("worker", 0), MakeTask("worker", 0)}),
              StatusIs(Code::kInvalidArgument, HasSubstr("twice")));
  ASSERT_THAT(RegisterLauncher(first, {MakeTask("worker", 0)}), IsOk());
  ASSERT_THAT(RegisterLauncher(first, {MakeTask("worker", 0)}), IsOk());  // again: the same one
  Events other_events;
  EXPECT_THAT(RegisterLauncher(Launcher(&other_events), Workers(2)),
              StatusIs(Code::kAlreadyExists, HasSubstr("/job:worker/task:0 is run by another")));
  auto status = Call<proto::LauncherStatusResponse>(leader_, proto::LauncherStatusRequest());
  ASSERT_THAT(status, IsOk());
  EXPECT_EQ(status->launchers(), 1);
}

TEST_F(LauncherTest, Register_ATaskConnectedWithoutIt_FailedPrecondition) {
  Spawn(Config(2));
  Reports reports;
  ASSERT_THAT(Register("worker", 1, 11, Agent(&reports)), IsOk());
  Events events;
  EXPECT_THAT(RegisterLauncher(Launcher(&events), Workers(2)),
              StatusIs(Code::kFailedPrecondition, HasSubstr("/job:worker/task:1 is connected")));
  auto status = Call<proto::LauncherStatusResponse>(leader_, proto::LauncherStatusRequest());
  ASSERT_THAT(status, IsOk());
  EXPECT_EQ(status->launchers(), 0);  // nothing was recorded
}

// A launcher that ran the tasks under an earlier leader (an HA failover) registers again while
// its tasks are connected; a process started for a restart the leader did not record is taken
// as the task's generation; what does not add up is refused.
TEST_F(LauncherTest, Rejoin_TasksConnectedAlready_AcceptedWithTheGenerationItRuns) {
  SpawnDurable(Config(2));
  Reports r0;
  Reports r1;
  ASSERT_THAT(Register("worker", 0, 10, Agent(&r0)), IsOk());
  ASSERT_THAT(Register("worker", 1, 11, Agent(&r1)), IsOk());
  Events events;
  auto launcher = Launcher(&events);
  proto::RegisterLauncherRequest request;
  request.set_host("host-a");
  for (const auto& task : Workers(2)) *request.add_tasks() = task;
  request.set_rejoin(true);
  request.add_generations(0);
  EXPECT_THAT(Call<proto::RegisterLauncherResponse>(leader_, request, launcher),
              StatusIs(Code::kInvalidArgument, HasSubstr("1 generations for 2 tasks")));
  request.add_generations(kMaxLead + 1);
  EXPECT_THAT(Call<proto::RegisterLauncherResponse>(leader_, request, launcher),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("generation 17 of /job:worker/task:1, whose recorded generation "
                                 "is 0")));
  request.set_generations(1, -1);
  EXPECT_THAT(Call<proto::RegisterLauncherResponse>(leader_, request, launcher),
              StatusIs(Code::kInvalidArgument));
  request.set_generations(1, 2);
  auto reply = Call<proto::RegisterLauncherResponse>(leader_, request, launcher);
  ASSERT_THAT(reply, IsOk());
  EXPECT_THAT(reply->generations(), ::testing::ElementsAre(0, 2));
  // Its reports are the launcher's own now: the generation it runs fails the task.
  auto exited = Exited(1, 2, 3);
  ASSERT_THAT(exited, IsOk());
  EXPECT_TRUE(exited->failure_recorded());
  Drain();
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ(TaskName((*events)[0].failed_task()), "/job:worker/task:1");
}

// Only a leader that took over an earlier one's state (a durable or HA leader) takes a launcher
// back: elsewhere a rejoin could take tasks whose processes connected on their own.
TEST_F(LauncherTest, RejoinAtALeaderWithoutState_FailedPrecondition) {
  Spawn(Config(2));
  Reports reports;
  ASSERT_THAT(Register("worker", 1, 11, Agent(&reports)), IsOk());
  Events events;
  proto::RegisterLauncherRequest request;
  request.set_host("host-a");
  *request.add_tasks() = MakeTask("worker", 1);
  request.set_rejoin(true);
  request.add_generations(0);
  EXPECT_THAT(
      Call<proto::RegisterLauncherResponse>(leader_, request, Launcher(&events)),
      StatusIs(Code::kFailedPrecondition, HasSubstr("took over no earlier leader's state")));
}

TEST_F(LauncherTest, GenerationsWithoutRejoin_Refused) {
  Spawn(Config(2));
  Events events;
  proto::RegisterLauncherRequest request;
  request.set_host("host-a");
  *request.add_tasks() = MakeTask("worker", 0);
  request.add_generations(3);
  EXPECT_THAT(Call<proto::RegisterLauncherResponse>(leader_, request, Launcher(&events)),
              StatusIs(Code::kInvalidArgument, HasSubstr("generations without rejoin")));
}

TEST_F(LauncherTest, LauncherGone_ItsTasksMayBeTakenByAnother) {
  Spawn(Config(2));
  Events events;
  auto first = Launcher(&events);
  ASSERT_THAT(RegisterLauncher(first, Workers(2)), IsOk());
  caf::anon_send_exit(first, caf::exit_reason::kill);
  Drain();
  Events second_events;
  EXPECT_THAT(RegisterLauncher(Launcher(&second_events), Workers(2)), IsOk());
}

TEST_F(LauncherTest, OneForOne_TaskFails_OnlyItRestartsInTheNextGenerationNobodyTold) {
  Spawn(Config(2), std::make_shared<OneForOne>());
  Events events;
  Reports r0, r1;
  ASSERT_NO_FATAL_FAILURE(LaunchAndConnectTwoWorkers(&events, &r0, &r1));
  ReportError(1);
  ASSERT_EQ(events->size(), 1u);
  const proto::SupervisionEvent& event = (*events)[0];
  EXPECT_EQ(TaskName(event.failed_task()), "/job:worker/task:1");
  EXPECT_EQ(event.error_code(), static_cast<int>(Code::kInternal));
  EXPECT_EQ(event.restart(), proto::RESTART_TASK);
  EXPECT_FALSE(event.job_failed());
  ASSERT_EQ(event.restarts_size(), 1);
  EXPECT_EQ(TaskName(event.restarts(0).task()), "/job:worker/task:1");
  EXPECT_EQ(event.restarts(0).generation(), 1);
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_DISCONNECTED);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  EXPECT_TRUE(r0->empty());
  // The next process registers as a new incarnation.
  ASSERT_THAT(Register("worker", 1, 12, Agent(&r1)), IsOk());
  EXPECT_EQ(State("worker", 1).incarnation(), 12u);
}

// A process of a generation the restart replaced, which had not connected (the fence knows no
// node of it), may not register: the registration says its generation, and the leader knows
// the task's current one.
TEST_F(LauncherTest, OneForOne_AProcessOfAReplacedGenerationMayNotRegister) {
  Spawn(Config(2), std::make_shared<OneForOne>());
  Events events;
  Reports r0, r1;
  ASSERT_NO_FATAL_FAILURE(LaunchAndConnectTwoWorkers(&events, &r0, &r1));
  ReportError(1);  // worker/1 restarts: generation 1
  auto registration = [&](uint64_t incarnation, std::optional<int64_t> generation) {
    proto::RegisterTaskRequest request;
    *request.mutable_source_task() = MakeTask("worker", 1);
    request.set_incarnation(incarnation);
    if (generation) request.set_generation(*generation);
    return Call<proto::RegisterTaskResponse>(leader_, request, Agent(&r1));
  };
  auto stale = registration(12, 0);
  EXPECT_EQ(stale.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(std::string(stale.status().message()),
              HasSubstr("started as generation 0 of /job:worker/task:1, and its launcher has "
                        "started generation 1 since"));
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_DISCONNECTED);
  ASSERT_THAT(registration(13, 1), IsOk());
  EXPECT_EQ(State("worker", 1).incarnation(), 13u);
}

// A task that registered as recoverable fails alone under OneForAll too: nobody is told, no new
// round starts (the others stay, and so do the keys); its launcher restarts that task alone.
TEST_F(LauncherTest, OneForAll_RecoverableTaskFails_RestartedAloneNoNewRound) {
  Spawn(Config(2), std::make_shared<OneForAll>());
  Events events;
  Reports r0, r1;
  ASSERT_THAT(RegisterLauncher(Launcher(&events), Workers(2)), IsOk());
  ASSERT_THAT(Register("worker", 0, 10, Agent(&r0)), IsOk());
  proto::RegisterTaskRequest recoverable;
  *recoverable.mutable_source_task() = MakeTask("worker", 1);
  recoverable.mutable_source_task()->set_recoverable(true);
  recoverable.set_incarnation(11);
  ASSERT_THAT(Call<proto::RegisterTaskResponse>(leader_, recoverable, Agent(&r1)).status(), IsOk());
  proto::InsertKeyValueRequest insert;
  insert.mutable_kv()->set_key("nccl/id");
  insert.mutable_kv()->set_value("round-0");
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, insert), IsOk());
  ReportError(1);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].restart(), proto::RESTART_TASK);
  EXPECT_EQ((*events)[0].round(), 0);
  EXPECT_TRUE(r0->empty());
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  proto::TryGetKeyValueRequest get;
  get.set_key("nccl/id");
  EXPECT_THAT(Call<proto::TryGetKeyValueResponse>(leader_, get), IsOk());
}

TEST_F(LauncherTest, OneForAll_TaskFails_NewRoundEveryTaskDisconnectedStoreAndBarriersEmpty) {
  Spawn(Config(2), std::make_shared<OneForAll>());
  Events events;
  Reports r0, r1;
  ASSERT_NO_FATAL_FAILURE(LaunchAndConnectTwoWorkers(&events, &r0, &r1));
  proto::InsertKeyValueRequest insert;
  insert.mutable_kv()->set_key("nccl/id");
  insert.mutable_kv()->set_value("round-0");
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, insert), IsOk());
  proto::BarrierRequest barrier;
  barrier.set_barrier_id("step");
  barrier.set_barrier_timeout_in_ms(60'000);
  *barrier.add_tasks() = MakeTask("worker", 0);
  *barrier.add_tasks() = MakeTask("worker", 1);
  *barrier.mutable_source_task() = MakeTask("worker", 0);
  auto waiting = Send<proto::BarrierResponse>(leader_, barrier);
  ASSERT_FALSE(waiting->has_value());

  ReportError(1);
  ASSERT_EQ(events->size(), 1u);
  const proto::SupervisionEvent& event = (*events)[0];
  EXPECT_EQ(event.restart(), proto::RESTART_ALL);
  EXPECT_EQ(event.round(), 1);
  ASSERT_EQ(event.restarts_size(), 2);  // this launcher's tasks, not ps/0
  EXPECT_EQ(event.restarts(0).generation(), 1);
  EXPECT_EQ(event.restarts(1).generation(), 1);
  ASSERT_EQ(r0->size(), 1u);  // the survivors were told
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_DISCONNECTED);
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_DISCONNECTED);
  // The old round's barrier call ended; its keys are gone.
  ASSERT_TRUE(waiting->has_value());
  EXPECT_FALSE(waiting->value().ok());
  proto::TryGetKeyValueRequest get;
  get.set_key("nccl/id");
  EXPECT_THAT(Call<proto::TryGetKeyValueResponse>(leader_, get), StatusIs(Code::kNotFound));
  // The new round: new incarnations register (no stale cluster error) and meet at "step" again.
  Reports n0, n1;
  ASSERT_THAT(Register("worker", 0, 20, Agent(&n0)), IsOk());
  ASSERT_THAT(Register("worker", 1, 21, Agent(&n1)), IsOk());
  EXPECT_TRUE(n0->empty());
  auto again = Send<proto::BarrierResponse>(leader_, barrier);
  EXPECT_FALSE(again->has_value());
  *barrier.mutable_source_task() = MakeTask("worker", 1);
  EXPECT_THAT(Call<proto::BarrierResponse>(leader_, barrier), IsOk());
  ASSERT_TRUE(again->has_value());
  EXPECT_THAT(**again, IsOk());
}

TEST_F(LauncherTest, TaskExited_CurrentGenerationNonZero_IsTheTasksFailure) {
  Spawn(Config(2), std::make_shared<OneForOne>());
  Events events;
  ASSERT_THAT(RegisterLauncher(Launcher(&events), Workers(2)), IsOk());
  // Task 0 crashed before it ever connected: only its launcher can tell.
  auto recorded = Exited(0, 0, 3);
  ASSERT_THAT(recorded, IsOk());
  EXPECT_TRUE(recorded->failure_recorded());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].error_code(), static_cast<int>(Code::kUnavailable));
  EXPECT_THAT((*events)[0].error_message(),
              HasSubstr("The process of /job:worker/task:0 exited with status 3"));
  EXPECT_EQ((*events)[0].restarts(0).generation(), 1);
  // The same exit again (an earlier generation now), and a clean exit: not failures.
  EXPECT_FALSE(Exited(0, 0, 3)->failure_recorded());
  EXPECT_FALSE(Exited(0, 1, 0)->failure_recorded());
  auto killed = Exited(0, 1, -1, 9);
  ASSERT_THAT(killed, IsOk());
  EXPECT_TRUE(killed->failure_recorded());
  EXPECT_THAT(events->back().error_message(), HasSubstr("was killed by signal 9 (SIGKILL)"));
  EXPECT_EQ(events->size(), 2u);
}

TEST_F(LauncherTest, FateSharing_JobFailedForGood_LaterExitsAreItsConsequence) {
  Spawn(Config(2));
  Events events;
  Reports r0, r1;
  ASSERT_NO_FATAL_FAILURE(LaunchAndConnectTwoWorkers(&events, &r0, &r1));
  ReportError(1);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_TRUE((*events)[0].job_failed());
  EXPECT_EQ((*events)[0].restart(), proto::RESTART_NONE);
  EXPECT_EQ((*events)[0].restarts_size(), 0);
  // Task 0 learned the error and exits 2: not a failure of its own.
  EXPECT_FALSE(Exited(0, 0, 2)->failure_recorded());
  EXPECT_EQ(events->size(), 1u);
}

TEST_F(LauncherTest, TaskExited_UnknownTask_InvalidArgument) {
  Spawn(Config(2));
  EXPECT_THAT(Exited(7, 0, 1), StatusIs(Code::kInvalidArgument, HasSubstr("/job:worker/task:7")));
}

}  // namespace
}  // namespace muster::testing
