// A leader and a worker in two actor systems, connected over 127.0.0.1: the connector finds
// the published coordinator and a registration goes through; a missing leader fails in time.
#include <chrono>
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/messages/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/leader_connector_actor.h"
#include "muster/net/leader/leader.h"
#include "muster/net/transport/node_config.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using namespace std::chrono_literals;
using ::muster::testing::StatusIs;
using ::testing::HasSubstr;

absl::StatusOr<CoordinatorActor> Connect(caf::actor_system& system, ConnectOptions options) {
  caf::scoped_actor self{system};
  absl::StatusOr<CoordinatorActor> result = absl::InternalError("no reply");
  self->request(SpawnLeaderConnector(system, options), 10s, caf::connect_atom::value)
      .receive([&](CoordinatorActor& leader) { result = std::move(leader); },
               [&](caf::error& error) { result = ToStatus(error); });
  return result;
}

TEST(LeaderConnectionTest, WorkerSystem_ConnectsAndRegisters) {
  NodeConfig leader_cfg;
  NodeConfig worker_cfg;
  caf::actor_system leader_system{leader_cfg};
  caf::actor_system worker_system{worker_cfg};
  CoordinatorOptions options;
  options.incarnation = 99;
  auto* job = options.config.add_coordinated_job_list();
  job->set_name("worker");
  job->set_num_tasks(1);
  auto published = Leader::Start(leader_system, options);
  ASSERT_TRUE(published.ok()) << published.status();

  auto leader =
      Connect(worker_system, {.host = "127.0.0.1", .port = (*published)->port(), .timeout = 5s});
  ASSERT_TRUE(leader.ok()) << leader.status();
  caf::scoped_actor self{worker_system};
  auto agent = worker_system.spawn([]() -> AgentActor::behavior_type {
    return {[](const proto::ReportErrorToTaskRequest&) {},
            [](const proto::PreemptionNotice&) { return proto::PreemptionAck(); },
            [](const proto::SyncPointNotice&) {}};
  });
  proto::RegisterTaskRequest request;
  *request.mutable_source_task() = MakeTask("worker", 0);
  request.set_incarnation(1);
  uint64_t leader_incarnation = 0;
  self->request(*leader, 5s, request, agent)
      .receive(
          [&](const proto::RegisterTaskResponse& r) {
            leader_incarnation = r.leader_incarnation();
          },
          [&](caf::error& error) { ADD_FAILURE() << worker_system.render(error); });
  EXPECT_EQ(leader_incarnation, 99u);
  caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
}

TEST(LeaderConnectionTest, NoLeader_DeadlineExceededNamingTheAddress) {
  NodeConfig worker_cfg;
  caf::actor_system worker_system{worker_cfg};
  // Port 1 on loopback: nothing listens, every attempt is refused at once.
  auto leader = Connect(worker_system, {.host = "127.0.0.1", .port = 1, .timeout = 300ms});
  EXPECT_THAT(leader, StatusIs(absl::StatusCode::kDeadlineExceeded,
                               HasSubstr("could not reach the Muster leader at 127.0.0.1:1")));
}

}  // namespace
}  // namespace muster
