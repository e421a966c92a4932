// A leader and a worker in two actor systems, connected over 127.0.0.1: the connector finds
// the published coordinator and a registration goes through; a missing leader fails in time
// (at once when the connector does not wait for it), saying that nothing listens.
#include <chrono>
#include <memory>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/connect/leader_connector_actor.h"
#include "muster/net/leader/leader.h"
#include "muster/net/transport/node_config.h"
#include "muster/net/transport/wire/frame_guard.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using namespace std::chrono_literals;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

absl::StatusOr<CoordinatorActor> Connect(caf::actor_system& system, ConnectOptions options) {
  caf::scoped_actor self{system};
  absl::StatusOr<CoordinatorActor> result = absl::InternalError("no reply");
  self->request(SpawnLeaderConnector(system, options), 10s, caf::connect_atom::value)
      .receive([&](CoordinatorActor& leader) { result = std::move(leader); },
               [&](caf::error& error) { result = ToStatus(error); });
  return result;
}

CoordinatorOptions OneWorker(uint64_t incarnation) {
  CoordinatorOptions options;
  options.incarnation = incarnation;
  auto* job = options.config.add_coordinated_job_list();
  job->set_name("worker");
  job->set_num_tasks(1);
  return options;
}

// Registers /job:worker/task:0 from `worker_system` with the leader on `port`; returns the
// leader's incarnation (0 when it failed, after reporting why).
uint64_t RegisterThrough(caf::actor_system& worker_system, uint16_t port) {
  auto leader = Connect(worker_system, {.host = "127.0.0.1", .port = port, .timeout = 5s});
  EXPECT_TRUE(leader.ok()) << leader.status();
  if (!leader.ok()) return 0;
  caf::scoped_actor self{worker_system};
  auto agent = worker_system.spawn([]() -> AgentActor::behavior_type {
    return {[](const proto::ReportErrorToTaskRequest&) {},
            [](const proto::PreemptionNotice&) { return proto::PreemptionAck(); },
            [](const proto::SyncPointNotice&) {}, [](const proto::MembershipNotice&) {}};
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
  caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
  return leader_incarnation;
}

TEST(LeaderConnectionTest, WorkerSystem_ConnectsAndRegisters) {
  NodeConfig leader_cfg;
  NodeConfig worker_cfg;
  caf::actor_system leader_system{leader_cfg};
  caf::actor_system worker_system{worker_cfg};
  auto published = Leader::Start(leader_system, OneWorker(99));
  ASSERT_TRUE(published.ok()) << published.status();
  EXPECT_EQ(RegisterThrough(worker_system, (*published)->port()), 99u);
}

// A node publishes at most PublishedActors::kCapacity coordinators at once; a stopped leader
// frees its place (an HA leader publishes a new front at each step down, a Python process may
// host leader after leader in one actor system).
TEST(LeaderConnectionTest, LeadersStartedAndStoppedPastTheCapacity_TheLastStillServes) {
  NodeConfig leader_cfg;
  NodeConfig worker_cfg;
  caf::actor_system leader_system{leader_cfg};
  caf::actor_system worker_system{worker_cfg};
  for (int i = 0; i < PublishedActors::kCapacity + 6; ++i) {
    auto stopped = Leader::Start(leader_system, OneWorker(1000 + i));
    ASSERT_TRUE(stopped.ok()) << "leader " << i << ": " << stopped.status();
    (*stopped)->Stop();
  }
  auto last = Leader::Start(leader_system, OneWorker(99));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(RegisterThrough(worker_system, (*last)->port()), 99u);
}

TEST(LeaderConnectionTest, NoLeader_DeadlineExceededSayingNothingListens) {
  NodeConfig worker_cfg;
  caf::actor_system worker_system{worker_cfg};
  // Port 1 on loopback: nothing listens, every attempt is refused at once.
  auto leader = Connect(worker_system, {.host = "127.0.0.1", .port = 1, .timeout = 300ms});
  EXPECT_THAT(leader, StatusIs(absl::StatusCode::kDeadlineExceeded,
                               AllOf(HasSubstr("could not reach the Muster leader at 127.0.0.1:1"),
                                     HasSubstr("nothing listening at 127.0.0.1:1"),
                                     Not(HasSubstr("ip_connect")))));
}

TEST(LeaderConnectionTest, NotWaitingForLeader_NothingListeningFailsAtOnce) {
  NodeConfig worker_cfg;
  caf::actor_system worker_system{worker_cfg};
  for (const char* host : {"127.0.0.1", "localhost", "::1"}) {
    auto start = std::chrono::steady_clock::now();
    auto leader =
        Connect(worker_system, {.host = host, .port = 1, .timeout = 8s, .wait_for_leader = false});
    EXPECT_THAT(leader, StatusIs(absl::StatusCode::kUnavailable,
                                 AllOf(HasSubstr(absl::StrCat("nothing listening at ", host, ":1")),
                                       HasSubstr("is the Muster leader running"))))
        << host;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s) << host;
  }
}

TEST(LeaderConnectionTest, RequesterGone_ConnectorQuitsWithoutWaitingForItsDeadline) {
  NodeConfig worker_cfg;
  caf::actor_system worker_system{worker_cfg};
  auto connector = SpawnLeaderConnector(
      worker_system, {.host = "127.0.0.1", .port = 1, .timeout = 60s, .wait_for_leader = true});
  auto requester = worker_system.spawn([connector](caf::event_based_actor* self) {
    self->request(connector, caf::infinite, caf::connect_atom::value)
        .then([](CoordinatorActor&) {}, [](caf::error&) {});
  });
  caf::scoped_actor self{worker_system};
  self->monitor(connector);
  caf::anon_send_exit(requester, caf::exit_reason::user_shutdown);
  bool quit = false;
  self->receive([&](caf::down_msg&) { quit = true; }, caf::after(5s) >> [] {});
  EXPECT_TRUE(quit);
}

}  // namespace
}  // namespace muster
