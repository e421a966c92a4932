// How an agent ends, on simulated time: an agent actor stopped without Shutdown() (what ~Agent
// does with shutdown_on_destruction = false) answers its pending calls before it goes, and
// Shutdown() of an agent in ERROR returns FailedPrecondition without asking the leader.
#include <map>
#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/actor/agent_actor.h"
#include "tests/testing/deterministic_fixture.h"
#include "tests/testing/recording_coordinator.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using Code = absl::StatusCode;

class AgentTeardownTest : public DeterministicTest {
 protected:
  // A coordinator of job "worker" with `tasks` tasks; a shutdown barrier of
  // `shutdown_barrier_ms` (0: none).
  void StartLeader(int tasks, int64_t shutdown_barrier_ms) {
    CoordinatorOptions options{.incarnation = 7};
    auto* job = options.config.add_coordinated_job_list();
    job->set_name("worker");
    job->set_num_tasks(tasks);
    options.config.set_heartbeat_timeout_in_ms(10'000);
    options.config.set_shutdown_barrier_timeout_in_ms(shutdown_barrier_ms);
    leader_ = Keep(SpawnCoordinator(system_, options));
    Drain();
  }

  // The agent of task `task`; its error callback records into errors_[task].
  AgentControlActor Spawn(int task) {
    AgentConfig config;
    config.task = MakeTask("worker", task);
    config.incarnation = 100 + task;
    config.local_leader = leader_;
    config.heartbeat_timeout = 10s;
    config.on_error = [errors = errors_, task](const absl::Status& s) {
      (*errors)[task].push_back(s);
    };
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

  static proto::GetKeyValueRequest Get(const std::string& key) {
    proto::GetKeyValueRequest request;
    request.set_key(key);
    return request;
  }

  static proto::BarrierRequest Barrier(const std::string& id) {
    proto::BarrierRequest request;
    request.set_barrier_id(id);
    request.set_barrier_timeout_in_ms(60'000);
    return request;
  }

  CoordinatorActor leader_;
  std::shared_ptr<std::map<int, std::vector<absl::Status>>> errors_ =
      std::make_shared<std::map<int, std::vector<absl::Status>>>();
};

// ~Agent with shutdown_on_destruction = false: a get of a key nobody writes and a barrier the
// other task never reaches are answered with Cancelled when the agent actor stops.
TEST_F(AgentTeardownTest, StoppedWithoutShutdown_BlockedGetAndBarrierCancelled) {
  StartLeader(2, 0);
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  auto get = Send<proto::GetKeyValueResponse>(a0, Get("never/written"));
  auto barrier = Send<proto::BarrierResponse>(a0, Barrier("never_reached"));
  ASSERT_FALSE(get->has_value());
  ASSERT_FALSE(barrier->has_value());
  caf::anon_send_exit(a0, caf::exit_reason::user_shutdown);
  Drain();
  ASSERT_TRUE(get->has_value());
  EXPECT_THAT(**get, StatusIs(Code::kCancelled,
                              HasSubstr("the agent of /job:worker/task:0 was destroyed while the "
                                        "call waited")));
  ASSERT_TRUE(barrier->has_value());
  EXPECT_THAT(**barrier, StatusIs(Code::kCancelled,
                                  HasSubstr("the agent of /job:worker/task:0 was destroyed")));
  EXPECT_TRUE(errors_->empty());  // no error callback: the agent was stopped, not failed
}

// A write the leader has not answered when the agent actor stops gets Unavailable (it may or
// may not have been applied); it is answered, not dropped.
TEST_F(AgentTeardownTest, StoppedWithoutShutdown_UnansweredWriteUnavailable) {
  auto log = std::make_shared<RecordingCoordinator>();
  log->hold_inserts = true;
  leader_ = Keep(SpawnRecordingCoordinator(system_, log));
  auto a0 = Spawn(0);
  ASSERT_THAT(Connect(a0), IsOk());
  proto::InsertKeyValueRequest insert;
  insert.mutable_kv()->set_key("addr/0");
  insert.mutable_kv()->set_value("10.0.0.1");
  auto held = Send<proto::InsertKeyValueResponse>(a0, insert);
  ASSERT_THAT(log->inserts, SizeIs(1));
  ASSERT_FALSE(held->has_value());
  caf::anon_send_exit(a0, caf::exit_reason::user_shutdown);
  Drain();
  ASSERT_TRUE(held->has_value());
  EXPECT_THAT(**held, StatusIs(Code::kUnavailable,
                               AllOf(HasSubstr("the agent of /job:worker/task:0 was destroyed"),
                                     HasSubstr("may or may not have been applied"))));
}

// Three tasks, a 1 s shutdown barrier: task 2 shuts down alone and the barrier fails; task 0
// learns it through its error callback, and its Shutdown() then returns FailedPrecondition,
// not the leader's Internal.
TEST_F(AgentTeardownTest, ShutdownBarrierFailed_ShutdownInErrorFailedPrecondition) {
  StartLeader(3, 1000);
  auto a0 = Spawn(0);
  auto a1 = Spawn(1);
  auto a2 = Spawn(2);
  for (const auto& agent : {a0, a1, a2}) ASSERT_THAT(Connect(agent), IsOk());
  auto alone = Send<proto::ShutdownTaskResponse>(a2, proto::ShutdownTaskRequest{});
  ASSERT_FALSE(alone->has_value());
  AdvanceTime(1s);
  ASSERT_TRUE(alone->has_value());
  EXPECT_THAT(**alone, StatusIs(Code::kInternal, HasSubstr("Shutdown barrier has failed")));
  ASSERT_THAT((*errors_)[0], SizeIs(1));
  EXPECT_THAT((*errors_)[0][0],
              StatusIs(Code::kInternal, HasSubstr("Shutdown barrier has failed")));
  ASSERT_EQ(StateOf(a0), AgentState::kError);
  EXPECT_THAT(Call<proto::ShutdownTaskResponse>(a0, proto::ShutdownTaskRequest{}),
              StatusIs(Code::kFailedPrecondition,
                       AllOf(HasSubstr("Shutdown() of /job:worker/task:0 was called while its "
                                       "agent is in ERROR state"),
                             HasSubstr("Shutdown barrier has failed"),
                             HasSubstr("did not contact the leader"),
                             HasSubstr("end this process with a failure"))));
  EXPECT_EQ(StateOf(a0), AgentState::kDisconnected);
  EXPECT_THAT((*errors_)[0], SizeIs(1));  // no second callback
}

// The leader still counts task 0 as connected after another task's error was pushed to it:
// Shutdown() in ERROR leaves locally and does not disconnect the task at the leader.
TEST_F(AgentTeardownTest, PushedError_ShutdownInErrorDoesNotReachTheLeader) {
  StartLeader(2, 0);
  auto a0 = Spawn(0);
  auto a1 = Spawn(1);
  ASSERT_THAT(Connect(a0), IsOk());
  ASSERT_THAT(Connect(a1), IsOk());
  proto::ReportErrorToServiceRequest report;
  report.set_error_code(static_cast<int>(Code::kDataLoss));
  report.set_error_message("bad shard");
  ASSERT_THAT(Call<proto::ReportErrorToServiceResponse>(a1, report), IsOk());
  ASSERT_EQ(StateOf(a0), AgentState::kError);
  ASSERT_EQ(LeaderState(0), proto::TASKSTATE_CONNECTED);
  EXPECT_THAT(Call<proto::ShutdownTaskResponse>(a0, proto::ShutdownTaskRequest{}),
              StatusIs(Code::kFailedPrecondition,
                       AllOf(HasSubstr("/job:worker/task:0"), HasSubstr("bad shard"),
                             HasSubstr("did not contact the leader"))));
  EXPECT_EQ(StateOf(a0), AgentState::kDisconnected);
  EXPECT_EQ(LeaderState(0), proto::TASKSTATE_CONNECTED);  // not DISCONNECTED by a request
}

}  // namespace
}  // namespace muster::testing
