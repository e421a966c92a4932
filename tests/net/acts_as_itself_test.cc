// A task acts only as itself, over real TCP: requests naming a task connected from another node
// (heartbeat, report error, shutdown, reset, barrier, WaitForAllTasks, GetAliveTasks) are
// PermissionDenied and change nothing; the task's own node is served. Registering a connected
// task with its own incarnation from another node cannot take it over.
#include <chrono>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/messages/vocabulary/atoms.h"
#include "tests/net/two_nodes_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

class ActsAsItselfTest : public testing::TwoNodesTest {
 protected:
  void SetUp() override {
    CoordinatorOptions options;
    auto* job = options.config.add_coordinated_job_list();
    job->set_name("worker");
    job->set_num_tasks(2);
    auto leader = Leader::Start(leader_system_, options);
    ASSERT_TRUE(leader.ok()) << leader.status();
    leader_ = *std::move(leader);
    auto agent = Agent::Create(worker_system_, {.leader = leader_->address(), .task_id = 0},
                               [this](const absl::Status& e) { errors_.push_back(e); });
    ASSERT_TRUE(agent.ok());
    victim_ = *std::move(agent);
    ASSERT_THAT(victim_->Connect(), IsOk());
    auto remote =
        intruder_system_.middleman().remote_actor<CoordinatorActor>("127.0.0.1", leader_->port());
    ASSERT_TRUE(remote);
    intruder_leader_ = *remote;
  }

  void TearDown() override { victim_.reset(); }

  // Sent from another node than task 0's.
  template <class Response, class Request>
  absl::Status FromIntruder(const Request& request) {
    caf::scoped_actor self{intruder_system_};
    absl::Status status = absl::InternalError("no reply");
    self->request(intruder_leader_, std::chrono::seconds(5), request)
        .receive([&](Response&) { status = absl::OkStatus(); },
                 [&](caf::error& e) { status = ToStatus(e); });
    return status;
  }

  proto::CoordinatedTask Victim() const { return MakeTask("worker", 0); }

  NodeConfig intruder_config_{WorkerNodeOptions()};
  caf::actor_system intruder_system_{intruder_config_};
  CoordinatorActor intruder_leader_;
  std::unique_ptr<Agent> victim_;
  std::vector<absl::Status> errors_;
};

TEST_F(ActsAsItselfTest, RequestsNamingAnotherNodesTask_PermissionDeniedNothingChanged) {
  proto::ReportErrorToServiceRequest report;
  *report.mutable_error_origin() = Victim();
  report.set_error_code(static_cast<int>(Code::kInternal));
  report.set_error_message("forged");
  EXPECT_THAT(FromIntruder<proto::ReportErrorToServiceResponse>(report),
              StatusIs(Code::kPermissionDenied, HasSubstr("may act only as itself")));
  proto::ShutdownTaskRequest shutdown;
  *shutdown.mutable_source_task() = Victim();
  EXPECT_THAT(FromIntruder<proto::ShutdownTaskResponse>(shutdown),
              StatusIs(Code::kPermissionDenied));
  proto::ResetTaskRequest reset;
  *reset.mutable_source_task() = Victim();
  EXPECT_THAT(FromIntruder<proto::ResetTaskResponse>(reset), StatusIs(Code::kPermissionDenied));
  proto::HeartbeatRequest beat;
  *beat.mutable_source_task() = Victim();
  beat.set_incarnation(victim_->incarnation());
  EXPECT_THAT(FromIntruder<proto::HeartbeatResponse>(beat), StatusIs(Code::kPermissionDenied));
  proto::BarrierRequest barrier;
  barrier.set_barrier_id("b");
  barrier.set_barrier_timeout_in_ms(1000);
  *barrier.mutable_source_task() = Victim();
  EXPECT_THAT(FromIntruder<proto::BarrierResponse>(barrier), StatusIs(Code::kPermissionDenied));
  proto::WaitForAllTasksRequest wait;
  *wait.mutable_source_task() = Victim();
  EXPECT_THAT(FromIntruder<proto::WaitForAllTasksResponse>(wait),
              StatusIs(Code::kPermissionDenied));
  proto::GetAliveTasksRequest alive;
  *alive.mutable_requesting_task() = Victim();
  *alive.add_tasks() = Victim();
  EXPECT_THAT(FromIntruder<proto::GetAliveTasksResponse>(alive), StatusIs(Code::kPermissionDenied));
  // Task 0 is untouched and still served from its own node.
  EXPECT_EQ(victim_->state(), AgentState::kRunning);
  EXPECT_TRUE(errors_.empty());
  auto states = victim_->GetTaskState({Victim()});
  ASSERT_THAT(states.status(), IsOk());
  EXPECT_EQ((*states)[0].state(), proto::TASKSTATE_CONNECTED);
  EXPECT_THAT(victim_->WaitAtBarrier("own", absl::Seconds(5), {Victim()}), IsOk());
}

// The coordinator's own messages (a task actor's new state, a barrier's end, its timer) name no
// sender it could check against a task: from another node they are PermissionDenied, else a
// peer could mark any task failed or take over its agent's place.
TEST_F(ActsAsItselfTest, CoordinatorsOwnMessagesFromAnotherNode_PermissionDeniedNothingChanged) {
  caf::scoped_actor self{intruder_system_};
  auto ask = [&](auto... message) {
    absl::Status status = absl::InternalError("no reply");
    self->request(caf::actor_cast<caf::actor>(intruder_leader_), std::chrono::seconds(5),
                  message...)
        .receive([&] { status = absl::OkStatus(); }, [&](caf::error& e) { status = ToStatus(e); });
    return status;
  };
  proto::CoordinatedTaskStateInfo failed;
  *failed.mutable_task() = Victim();
  failed.set_state(proto::TASKSTATE_ERROR);
  failed.set_error_code(static_cast<int>(Code::kInternal));
  failed.set_error_message("forged");
  EXPECT_THAT(ask(task_state_atom::value, failed, AgentActor{}),
              StatusIs(Code::kPermissionDenied, HasSubstr("from another node")));
  EXPECT_THAT(ask(barrier_done_atom::value, std::string("own"), int64_t{1},
                  ToError(absl::InternalError("forged")), proto::BarrierInfo()),
              StatusIs(Code::kPermissionDenied));
  EXPECT_THAT(ask(progress_check_atom::value), StatusIs(Code::kPermissionDenied));
  auto states = victim_->GetTaskState({Victim()});
  ASSERT_THAT(states.status(), IsOk());
  EXPECT_EQ((*states)[0].state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(victim_->state(), AgentState::kRunning);
  EXPECT_TRUE(errors_.empty());
}

TEST_F(ActsAsItselfTest, RegisteringAConnectedTaskWithItsIncarnationFromAnotherNode_Denied) {
  AgentActor impostor = intruder_system_.spawn([]() -> AgentActor::behavior_type {
    return {[](const proto::ReportErrorToTaskRequest&) {},
            [](const proto::PreemptionNotice&) { return proto::PreemptionAck(); },
            [](const proto::SyncPointNotice&) {}, [](const proto::MembershipNotice&) {}};
  });
  proto::RegisterTaskRequest request;
  *request.mutable_source_task() = Victim();
  request.set_incarnation(victim_->incarnation());
  absl::Status status = absl::InternalError("no reply");
  {
    caf::scoped_actor self{intruder_system_};
    self->request(intruder_leader_, std::chrono::seconds(5), request, impostor)
        .receive([&](proto::RegisterTaskResponse&) { status = absl::OkStatus(); },
                 [&](caf::error& e) { status = ToStatus(e); });
  }
  EXPECT_THAT(status, StatusIs(Code::kPermissionDenied, HasSubstr("cannot take it over")));
  caf::anon_send_exit(impostor, caf::exit_reason::user_shutdown);
  // Task 0 still belongs to its own node: its calls work and nobody was told of a failure.
  EXPECT_THAT(victim_->WaitAtBarrier("still-mine", absl::Seconds(5), {Victim()}), IsOk());
  EXPECT_TRUE(errors_.empty());
}

TEST_F(ActsAsItselfTest, TaskThatNeverConnected_MayBeRegisteredFromAnyNode) {
  auto other =
      Agent::Create(intruder_system_, {.leader = leader_->address(), .task_id = 1}, nullptr);
  ASSERT_TRUE(other.ok());
  EXPECT_THAT((*other)->Connect(), IsOk());
  EXPECT_THAT((*other)->Shutdown(), IsOk());
}

}  // namespace
}  // namespace muster
