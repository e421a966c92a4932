// The agent actor against a coordinator in the same actor system, on simulated time: state
// machine, heartbeats, error callback once per episode, barrier counters, shutdown and a lost
// leader.
#include "muster/net/agent/actor/agent_actor.h"
#include "muster/net/agent/actor/agent_state.h"

#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/actors/caf/reply_sink.h"
#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/messages/task_name.h"
#include "tests/testing/deterministic_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

class AgentActorTest : public DeterministicTest {
 protected:
  void SetUp() override {
    CoordinatorOptions options{.incarnation = 7};
    auto* job = options.config.add_coordinated_job_list();
    job->set_name("worker");
    job->set_num_tasks(2);
    options.config.set_heartbeat_timeout_in_ms(10'000);
    leader_ = Keep(SpawnCoordinator(system_, options));
    Drain();
  }

  AgentControlActor Spawn(int task, HeartbeatBatcherActor batcher = {},
                          BarrierCombinerActor combiner = {}, bool one_way_heartbeats = false,
                          uint64_t incarnation = 0, bool claim = false) {
    AgentConfig config;
    config.claim = claim;
    config.one_way_heartbeats = one_way_heartbeats;
    config.heartbeat_batcher = std::move(batcher);
    config.barrier_combiner = std::move(combiner);
    config.task = MakeTask("worker", task);
    config.incarnation = incarnation != 0 ? incarnation : 100 + task;
    config.local_leader = leader_;
    config.heartbeat_timeout = 10s;
    config.on_error = [errors = errors_](const absl::Status& s) { errors->push_back(s); };
    return Keep(SpawnAgentActor(system_, config));
  }

  absl::Status Connect(const AgentControlActor& agent) {
    return Call<proto::RegisterTaskResponse>(agent, caf::connect_atom::value).status();
  }

  AgentState StateOf(const AgentControlActor& agent) {
    return Call<AgentStatus>(agent, agent_state_atom::value)->state;
  }

  proto::CoordinatedTaskState LeaderState(int task) {
    proto::GetTaskStateRequest request;
    *request.add_source_task() = MakeTask("worker", task);
    return Call<proto::GetTaskStateResponse>(leader_, request)->task_state(0).state();
  }

  proto::BarrierRequest Barrier(const std::string& id) {
    proto::BarrierRequest request;
    request.set_barrier_id(id);
    request.set_barrier_timeout_in_ms(60'000);
    return request;
  }

  CoordinatorActor leader_;
  const proto::ReportErrorToTaskRequest report_for_test_ = [] {
    proto::ReportErrorToTaskRequest report;
    report.set_error_code(static_cast<int>(absl::StatusCode::kUnavailable));
    report.set_error_message("pushed");
    *report.mutable_error_payload()->mutable_source_task() = MakeTask("worker", 1);
    return report;
  }();
  std::shared_ptr<std::vector<absl::Status>> errors_ =
      std::make_shared<std::vector<absl::Status>>();
};

TEST_F(AgentActorTest, Connect_RunningAndSecondConnectFailedPrecondition) {
  auto agent = Spawn(0);
  EXPECT_EQ(StateOf(agent), AgentState::kDisconnected);
  ASSERT_THAT(Connect(agent), IsOk());
  EXPECT_EQ(StateOf(agent), AgentState::kRunning);
  EXPECT_EQ(LeaderState(0), proto::TASKSTATE_CONNECTED);
  EXPECT_THAT(Connect(agent), StatusIs(Code::kFailedPrecondition, HasSubstr("RUNNING")));
}

TEST_F(AgentActorTest, CallsBeforeConnect_FailedPreconditionNamingTheState) {
  auto agent = Spawn(0);
  EXPECT_THAT(Call<proto::WaitForAllTasksResponse>(agent, proto::WaitForAllTasksRequest{}),
              StatusIs(Code::kFailedPrecondition, HasSubstr("DISCONNECTED")));
  EXPECT_THAT(Call<proto::ResetTaskResponse>(agent, proto::ResetTaskRequest{}),
              StatusIs(Code::kFailedPrecondition, HasSubstr("not in ERROR state")));
}

TEST_F(AgentActorTest, KeyValueCallsBeforeConnect_ReachTheLeaderWithoutRegistering) {
  auto agent = Spawn(0);
  proto::TryGetKeyValueRequest get;
  get.set_key("config/lr");
  EXPECT_THAT(Call<proto::TryGetKeyValueResponse>(agent, get),
              StatusIs(Code::kNotFound, HasSubstr("config/lr")));
  proto::InsertKeyValueRequest put;
  put.mutable_kv()->set_key("config/lr");
  put.mutable_kv()->set_value("0.01");
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(agent, put), IsOk());
  auto value = Call<proto::TryGetKeyValueResponse>(agent, get);
  ASSERT_THAT(value.status(), IsOk());
  EXPECT_EQ(value->kv().value(), "0.01");
  EXPECT_EQ(StateOf(agent), AgentState::kDisconnected);
  EXPECT_EQ(LeaderState(0), proto::TASKSTATE_DISCONNECTED);
}

TEST_F(AgentActorTest, JobStateReadsBeforeConnect_ReachTheLeaderWithoutRegistering) {
  auto holder = Spawn(1);
  ASSERT_THAT(Connect(holder), IsOk());
  auto reader = Spawn(0);
  proto::GetTaskStateRequest states;
  *states.add_source_task() = MakeTask("worker", 1);
  auto answer = Call<proto::GetTaskStateResponse>(reader, states);
  ASSERT_THAT(answer.status(), IsOk());
  EXPECT_EQ(answer->task_state(0).state(), proto::TASKSTATE_CONNECTED);
  proto::WatchJobStateRequest watch;
  watch.set_job_name("worker");
  watch.set_version_number(-1);
  auto job = Call<proto::WatchJobStateResponse>(reader, watch);
  ASSERT_THAT(job.status(), IsOk());
  EXPECT_EQ(job->task_state_size(), 2);
  EXPECT_EQ(StateOf(reader), AgentState::kDisconnected);
  EXPECT_EQ(LeaderState(0), proto::TASKSTATE_DISCONNECTED);
}

// A claim of a held task is refused for the caller: its agent stays DISCONNECTED (a Reset()
// would reach the holder's task), and on_error is not called.
TEST_F(AgentActorTest, ClaimOfAHeldTask_AlreadyExistsAndTheClaimerStaysDisconnected) {
  auto holder = Spawn(0);
  ASSERT_THAT(Connect(holder), IsOk());
  auto claimer = Spawn(0, {}, {}, false, /*incarnation=*/555, /*claim=*/true);
  EXPECT_THAT(Connect(claimer), StatusIs(Code::kAlreadyExists, HasSubstr("held by incarnation")));
  EXPECT_TRUE(errors_->empty());
  EXPECT_EQ(StateOf(claimer), AgentState::kDisconnected);
  EXPECT_THAT(Call<proto::ResetTaskResponse>(claimer, proto::ResetTaskRequest{}),
              StatusIs(Code::kFailedPrecondition, HasSubstr("not in ERROR state")));
  EXPECT_EQ(StateOf(holder), AgentState::kRunning);
  EXPECT_EQ(LeaderState(0), proto::TASKSTATE_CONNECTED);
  auto free = Spawn(1, {}, {}, false, /*incarnation=*/556, /*claim=*/true);
  EXPECT_THAT(Connect(free), IsOk());
  EXPECT_EQ(LeaderState(1), proto::TASKSTATE_CONNECTED);
}

TEST_F(AgentActorTest, Heartbeats_KeepTheTaskConnectedPastManyTimeouts) {
  auto agent = Spawn(0);
  ASSERT_THAT(Connect(agent), IsOk());
  for (int i = 0; i < 12; ++i) AdvanceTime(5s);
  EXPECT_EQ(LeaderState(0), proto::TASKSTATE_CONNECTED);
  EXPECT_TRUE(errors_->empty());
}

TEST_F(AgentActorTest, HeartbeatsThroughBatcher_KeepTasksConnectedAndReportRestart) {
  auto batcher = Keep(SpawnHeartbeatBatcher(system_, {.window = 20ms}));
  auto first = Spawn(0, batcher);
  auto second = Spawn(1, batcher);
  ASSERT_THAT(Connect(first), IsOk());
  ASSERT_THAT(Connect(second), IsOk());
  for (int i = 0; i < 600; ++i) AdvanceTime(100ms);  // fine steps: each beat waits 20 ms
  EXPECT_EQ(LeaderState(0), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(LeaderState(1), proto::TASKSTATE_CONNECTED);
  EXPECT_TRUE(errors_->empty());
}

TEST_F(AgentActorTest, HeartbeatThroughBatcher_TaskFailedAtLeader_ErrorCallback) {
  auto batcher = Keep(SpawnHeartbeatBatcher(system_, {.window = 20ms}));
  auto agent = Spawn(0, batcher);
  ASSERT_THAT(Connect(agent), IsOk());
  // The task restarts elsewhere: the leader fails the first incarnation.
  proto::RegisterTaskRequest restarted;
  *restarted.mutable_source_task() = MakeTask("worker", 0);
  restarted.set_incarnation(999);
  ASSERT_FALSE(Call<proto::RegisterTaskResponse>(leader_, restarted, AgentActor{}).ok());
  AdvanceTime(5s);    // the beat reaches the batcher
  AdvanceTime(20ms);  // the batch goes out
  ASSERT_EQ(errors_->size(), 1u);
  EXPECT_THAT((*errors_)[0], StatusIs(Code::kAborted, HasSubstr("/job:worker/task:0")));
  EXPECT_EQ(StateOf(agent), AgentState::kError);
}

TEST_F(AgentActorTest, OneWayHeartbeats_KeepTheTaskConnectedPastManyTimeouts) {
  auto agent = Spawn(0, {}, {}, /*one_way_heartbeats=*/true);
  ASSERT_THAT(Connect(agent), IsOk());
  for (int i = 0; i < 12; ++i) AdvanceTime(5s);
  EXPECT_EQ(LeaderState(0), proto::TASKSTATE_CONNECTED);
  EXPECT_TRUE(errors_->empty());
  EXPECT_EQ(StateOf(agent), AgentState::kRunning);
}

TEST_F(AgentActorTest, OneWayHeartbeat_TaskFailedAtLeader_ErrorPushedToTheAgent) {
  auto agent = Spawn(0, {}, {}, /*one_way_heartbeats=*/true);
  ASSERT_THAT(Connect(agent), IsOk());
  // The task restarts elsewhere: the leader fails the first incarnation.
  proto::RegisterTaskRequest restarted;
  *restarted.mutable_source_task() = MakeTask("worker", 0);
  restarted.set_incarnation(999);
  ASSERT_FALSE(Call<proto::RegisterTaskResponse>(leader_, restarted, AgentActor{}).ok());
  EXPECT_TRUE(errors_->empty());  // the leader tells a failed task's agent on its next beat
  AdvanceTime(5s);
  ASSERT_EQ(errors_->size(), 1u);
  // Pushed (a reply to a request would carry the leader's message alone).
  EXPECT_THAT((*errors_)[0], StatusIs(Code::kAborted, HasSubstr("Error reported from "
                                                                "/job:worker/task:0")));
  EXPECT_EQ(StateOf(agent), AgentState::kError);
}

TEST_F(AgentActorTest, ErrorMessageOfItsOwn_PutsTheRunningAgentInErrorAndKeepsItUp) {
  auto agent = Spawn(0, {}, {}, /*one_way_heartbeats=*/true);
  ASSERT_THAT(Connect(agent), IsOk());
  // What the leader's token gate answers a one-way beat from a node it has not admitted.
  caf::anon_send(caf::actor_cast<caf::actor>(agent),
                 ToError(absl::UnauthenticatedError("no job token presented")));
  Drain();
  ASSERT_EQ(errors_->size(), 1u);
  EXPECT_THAT((*errors_)[0], StatusIs(Code::kUnauthenticated, HasSubstr("no job token")));
  auto status = Call<AgentStatus>(agent, agent_state_atom::value);
  ASSERT_THAT(status.status(), IsOk());  // the agent actor is still there to answer
  EXPECT_EQ(status->state, AgentState::kError);
}

TEST_F(AgentActorTest, BarriersThroughCombiner_PassAndCountersAdvance) {
  auto combiner = Keep(SpawnBarrierCombiner(system_));
  auto first = Spawn(0, {}, combiner);
  auto second = Spawn(1, {}, combiner);
  ASSERT_THAT(Connect(first), IsOk());
  ASSERT_THAT(Connect(second), IsOk());
  for (int64_t round = 0; round < 2; ++round) {
    auto a = Send<proto::BarrierResponse>(first, Barrier("step"));
    EXPECT_FALSE(a->has_value());
    auto b = Send<proto::BarrierResponse>(second, Barrier("step"));
    ASSERT_TRUE(a->has_value() && b->has_value());
    ASSERT_THAT(**a, IsOk());
    EXPECT_EQ((**a)->counter(), round);
    ASSERT_THAT(**b, IsOk());
    EXPECT_EQ((**b)->counter(), round);
  }
}

TEST_F(AgentActorTest, OtherTaskFails_ErrorCallbackOnceNamingIt) {
  auto a0 = Spawn(0);
  auto a1 = Spawn(1);
  ASSERT_THAT(Connect(a0), IsOk());
  ASSERT_THAT(Connect(a1), IsOk());
  proto::ReportErrorToServiceRequest report;
  report.set_error_code(static_cast<int>(Code::kDataLoss));
  report.set_error_message("bad shard");
  ASSERT_THAT(Call<proto::ReportErrorToServiceResponse>(a1, report), IsOk());
  EXPECT_EQ(StateOf(a0), AgentState::kError);
  EXPECT_EQ(StateOf(a1), AgentState::kError);
  ASSERT_EQ(errors_->size(), 2u);  // a1 for its own report, a0 for the pushed error
  EXPECT_THAT((*errors_)[1], StatusIs(Code::kDataLoss, HasSubstr("/job:worker/task:1")));
  caf::anon_send(a0, report_for_test_);  // a second push in the same episode: no callback
  Drain();
  EXPECT_EQ(errors_->size(), 2u);
}

TEST_F(AgentActorTest, ResetAfterError_ConnectsAgain) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  caf::anon_send(a0, report_for_test_);
  Drain();
  ASSERT_EQ(StateOf(a0), AgentState::kError);
  EXPECT_THAT(Call<proto::WaitForAllTasksResponse>(a0, proto::WaitForAllTasksRequest{}),
              StatusIs(Code::kFailedPrecondition, HasSubstr("call Reset() first")));
  ASSERT_THAT(Call<proto::ResetTaskResponse>(a0, proto::ResetTaskRequest{}), IsOk());
  EXPECT_EQ(StateOf(a0), AgentState::kDisconnected);
  EXPECT_THAT(Connect(a0), IsOk());
}

TEST_F(AgentActorTest, BarrierCounters_IncreaseAndOngoingIdRefused) {
  auto a0 = Spawn(0);
  auto a1 = Spawn(1);
  ASSERT_THAT(Connect(a0), IsOk());
  ASSERT_THAT(Connect(a1), IsOk());
  for (int64_t round = 0; round < 2; ++round) {
    auto first = Send<proto::BarrierResponse>(a0, Barrier("step"));
    EXPECT_THAT(Call<proto::BarrierResponse>(a0, Barrier("step")),
                StatusIs(Code::kFailedPrecondition, HasSubstr("already ongoing")));
    auto second = Call<proto::BarrierResponse>(a1, Barrier("step"));
    ASSERT_THAT(second, IsOk());
    EXPECT_EQ(second->counter(), round);
    ASSERT_TRUE(first->has_value());
    EXPECT_EQ((*first)->value().counter(), round);
  }
}

TEST_F(AgentActorTest, CancelBarrier_UnknownRefusedOngoingCancelled) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  proto::CancelBarrierRequest cancel;
  cancel.set_barrier_id("ckpt");
  EXPECT_THAT(Call<proto::CancelBarrierResponse>(a0, cancel),
              StatusIs(Code::kFailedPrecondition, HasSubstr("non-existent barrier ckpt")));
  auto waiting = Send<proto::BarrierResponse>(a0, Barrier("ckpt"));
  EXPECT_THAT(Call<proto::CancelBarrierResponse>(a0, cancel), IsOk());
  ASSERT_TRUE(waiting->has_value());
  EXPECT_THAT(**waiting, StatusIs(Code::kCancelled));
  EXPECT_THAT(Call<proto::CancelBarrierResponse>(a0, cancel),
              StatusIs(Code::kFailedPrecondition, HasSubstr("not ongoing")));
}

TEST_F(AgentActorTest, Shutdown_CancelsBlockedGetAndDisconnects) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  proto::GetKeyValueRequest get;
  get.set_key("nccl/id");
  auto blocked = Send<proto::GetKeyValueResponse>(a0, get);
  EXPECT_FALSE(blocked->has_value());
  EXPECT_THAT(Call<proto::ShutdownTaskResponse>(a0, proto::ShutdownTaskRequest{}), IsOk());
  ASSERT_TRUE(blocked->has_value());
  EXPECT_THAT(**blocked, StatusIs(Code::kCancelled, HasSubstr("shutting down")));
  EXPECT_EQ(StateOf(a0), AgentState::kDisconnected);
  EXPECT_EQ(LeaderState(0), proto::TASKSTATE_DISCONNECTED);
}

TEST_F(AgentActorTest, LeaderStops_PendingCallsUnavailableAndCallbackFires) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  proto::GetKeyValueRequest get;
  get.set_key("never");
  auto blocked = Send<proto::GetKeyValueResponse>(a0, get);
  caf::anon_send_exit(leader_, caf::exit_reason::kill);
  Drain();
  ASSERT_TRUE(blocked->has_value());
  EXPECT_THAT(**blocked, StatusIs(Code::kUnavailable, HasSubstr("lost the connection")));
  ASSERT_EQ(errors_->size(), 1u);
  EXPECT_THAT(errors_->front(), StatusIs(Code::kUnavailable));
}

// A call that reaches the agent after the leader was lost (the caller sent it just before) fails
// at once with the loss, like the calls that were pending; it does not connect again.
TEST_F(AgentActorTest, LeaderStops_LaterKeyValueCallFailsAtOnceWithTheLoss) {
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  caf::anon_send_exit(leader_, caf::exit_reason::kill);
  Drain();
  ASSERT_EQ(StateOf(a0), AgentState::kError);
  proto::TryGetKeyValueRequest get;
  get.set_key("config/lr");
  EXPECT_THAT(Call<proto::TryGetKeyValueResponse>(a0, get),
              StatusIs(Code::kUnavailable, HasSubstr("lost the connection")));
}

// The user's on_preemption runs on the callback runner; a task must still learn of the notice
// before ReachedSyncPoint says true, even when the sync step is there before the runner ran.
TEST_F(AgentActorTest, PreemptionNotice_CallbackRunsBeforeTheSyncStepIsAnswered) {
  auto order = std::make_shared<std::vector<std::string>>();
  AgentConfig config;
  config.task = MakeTask("worker", 0);
  config.incarnation = 100;
  config.local_leader = leader_;
  config.heartbeat_timeout = 10s;
  config.on_preemption = [order](const proto::PreemptionNotice& notice) {
    order->push_back("notice " + notice.reason());
  };
  auto agent = Keep(SpawnAgentActor(system_, config));
  ASSERT_THAT(Connect(agent), IsOk());
  config.progress->step.store(4);
  proto::PreemptionNotice notice;
  notice.set_reason("maintenance");
  proto::SyncPointNotice sync;
  sync.set_step(5);
  // All three reach the agent's mailbox before anything runs.
  caf::anon_send(agent, notice);
  caf::anon_send(agent, sync);
  RequestWithSink(
      caf::actor_cast<caf::strong_actor_ptr>(agent),
      caf::make_message(sync_point_atom::value, int64_t{5}),
      [order](caf::message& reply) {
        order->push_back(reply.match_elements<bool>() && reply.get_as<bool>(0) ? "sync true"
                                                                               : "sync other");
      },
      caf::error{});
  Drain();
  EXPECT_EQ(*order, (std::vector<std::string>{"notice maintenance", "sync true"}));
}

// Watch callbacks run on the callback runner; StopWatchKey returns only after the ones queued
// before it ran, so none runs after it returned (the runner is held back here until the stop
// was answered by the leader).
TEST_F(AgentActorTest, StopWatchKey_ReturnsAfterTheWatchsQueuedCallbacksRan) {
  auto order = std::make_shared<std::vector<std::string>>();
  CallbackRunnerActor runner = Keep(SpawnCallbackRunner(system_));
  AgentConfig config;
  config.task = MakeTask("worker", 0);
  config.incarnation = 100;
  config.local_leader = leader_;
  config.heartbeat_timeout = 10s;
  auto agent = Keep(SpawnAgentActor(system_, config, runner));
  ASSERT_THAT(Connect(agent), IsOk());
  proto::WatchKeyRequest watch;
  watch.set_key("cfg");
  WatchCallback callback{
      [order](const proto::KeyValueChangeEvent& e) { order->push_back("event " + e.key()); }};
  ASSERT_THAT(Call<proto::WatchKeyResponse>(agent, watch, callback).status(), IsOk());
  proto::KeyValueChangeEvent event;
  event.set_watched_key("cfg");
  event.set_key("cfg/a");
  event.set_revision(100);
  caf::anon_send(agent, event);
  proto::StopWatchKeyRequest stop;
  stop.set_key("cfg");
  RequestWithSink(
      caf::actor_cast<caf::strong_actor_ptr>(agent), caf::make_message(stop),
      [order](caf::message&) { order->push_back("stopped"); }, caf::error{});
  auto* held = caf::actor_cast<caf::abstract_actor*>(runner);
  scheduler_.run_jobs_filtered(
      [held](caf::resumable* job) { return dynamic_cast<caf::abstract_actor*>(job) != held; });
  Drain();
  EXPECT_EQ(*order, (std::vector<std::string>{"event cfg/a", "stopped"}));
}

// Pushes (errors, watch events, notices) count only from this process or the current leader:
// a leader the agent left, whose pushes arrive late, is not heard.
TEST(FormerLeaderTest, OnlyAProcessOtherThanThisOneAndTheCurrentLeaderIsAFormerLeader) {
  caf::node_id::default_data::host_id_type host{};
  host[0] = 1;
  const caf::node_id own = caf::make_node_id(1, host);
  const caf::node_id leader = caf::make_node_id(2, host);
  const caf::node_id former = caf::make_node_id(3, host);
  const caf::node_id none;
  EXPECT_FALSE(IsFormerLeaderNode(none, own, leader));  // sent anonymously
  EXPECT_FALSE(IsFormerLeaderNode(own, own, leader));
  EXPECT_FALSE(IsFormerLeaderNode(leader, own, leader));
  EXPECT_TRUE(IsFormerLeaderNode(former, own, leader));
  EXPECT_TRUE(IsFormerLeaderNode(former, own, none));  // between two leaders
  EXPECT_TRUE(IsFormerLeaderNode(leader, own, none));
  EXPECT_FALSE(IsFormerLeaderNode(own, own, none));
}

}  // namespace
}  // namespace muster::testing
