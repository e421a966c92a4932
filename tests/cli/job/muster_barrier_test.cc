// A barrier held open in a real `muster serve` process: `muster status` lists it with the tasks
// it waits for, and stopping the leader answers the waiting call with Aborted. The barrier
// call comes from a client actor system in the test process, over 127.0.0.1.
#include <csignal>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/messages/incarnation.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/connect/leader_connector_actor.h"
#include "muster/net/transport/node_config.h"
#include "tests/cli/cli_process.h"
#include "tests/testing/status_matchers.h"

namespace muster::cli {
namespace {

using namespace std::chrono_literals;
using ::muster::testing::StatusIs;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

AgentActor::behavior_type IgnoreErrors() {
  return {[](const proto::ReportErrorToTaskRequest&) {},
          [](const proto::PreemptionNotice&) { return proto::PreemptionAck(); },
          [](const proto::SyncPointNotice&) {}, [](const proto::MembershipNotice&) {}};
}

class MusterBarrierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(leader_.ok());
    ConnectOptions options;
    options.host = "127.0.0.1";
    options.port =
        static_cast<uint16_t>(std::stoi(leader_.address().substr(leader_.address().find(':') + 1)));
    options.timeout = 10s;
    self_->request(SpawnLeaderConnector(system_, options), 15s, caf::connect_atom::value)
        .receive([&](CoordinatorActor& leader) { coordinator_ = std::move(leader); },
                 [&](caf::error& error) { FAIL() << ToStatus(error); });
  }

  void TearDown() override { caf::anon_send_exit(agent_, caf::exit_reason::user_shutdown); }

  absl::Status Register(int task) {
    proto::RegisterTaskRequest request;
    *request.mutable_source_task() = MakeTask("worker", task);
    request.set_incarnation(NewIncarnation());
    absl::Status status;
    self_->request(coordinator_, 10s, request, agent_)
        .receive([](const proto::RegisterTaskResponse&) {},
                 [&](caf::error& error) { status = ToStatus(error); });
    return status;
  }

  // Registers worker/0 and calls barrier "init" for every task; the reply stays pending.
  auto StartBarrier() {
    EXPECT_TRUE(Register(0).ok());
    proto::BarrierRequest barrier;
    barrier.set_barrier_id("init");
    barrier.set_barrier_timeout_in_ms(60'000);
    *barrier.mutable_source_task() = MakeTask("worker", 0);
    return self_->request(coordinator_, 30s, barrier);
  }

  Leader leader_{{"--job=worker=3"}};
  NodeConfig config_;
  caf::actor_system system_{config_};
  caf::scoped_actor self_{system_};
  AgentActor agent_ = system_.spawn(IgnoreErrors);
  CoordinatorActor coordinator_;
};

TEST_F(MusterBarrierTest, OpenBarrier_StatusListsTheTasksItWaitsFor) {
  StartBarrier();  // its reply never comes: the test ends with the barrier open
  Result status = RunMuster({"status", leader_.leader_flag()});
  EXPECT_EQ(status.code, 0) << status.output;
  EXPECT_THAT(status.output, HasSubstr("OPEN BARRIERS (1)"));
  EXPECT_THAT(
      status.output,
      ContainsRegex("init::0 +1/3 +[0-9.]+s +in [0-9.]+s +/job:worker/task:0 +worker/\\[1-2\\]"));
}

TEST_F(MusterBarrierTest, LeaderStops_TheWaitingCallGetsAborted) {
  auto pending = StartBarrier();
  // The barrier is open once status lists it; then the leader stops.
  ASSERT_THAT(RunMuster({"status", leader_.leader_flag()}).output, HasSubstr("init::0"));
  leader_.process().Signal(SIGTERM);
  absl::Status result;
  pending.receive([](const proto::BarrierResponse&) {},
                  [&](caf::error& error) { result = ToStatus(error); });
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kAborted, HasSubstr("shutting down")));
  EXPECT_EQ(Finish(leader_.process()).code, 0);
}

}  // namespace
}  // namespace muster::cli
