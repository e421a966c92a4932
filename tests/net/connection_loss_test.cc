// The leader and a worker in two actor systems over 127.0.0.1: when the worker shuts down
// (its agent stops and its actor system goes away), the leader puts its task in ERROR within
// milliseconds ("connection to worker lost"), without waiting for the heartbeat timeout.
#include <chrono>
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/messages/task_name.h"
#include "muster/net/leader/leader.h"
#include "muster/net/transport/node_config.h"

namespace muster {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

TEST(ConnectionLossTest, WorkerSystemShutDown_TaskFailsWithinMilliseconds) {
  NodeConfig leader_cfg;
  caf::actor_system leader_system{leader_cfg};
  CoordinatorOptions options;
  auto* job = options.config.add_coordinated_job_list();
  job->set_name("worker");
  job->set_num_tasks(1);
  options.config.set_heartbeat_timeout_in_ms(60'000);
  auto leader_or = Leader::Start(leader_system, options);
  ASSERT_TRUE(leader_or.ok()) << leader_or.status();
  std::unique_ptr<Leader> published = *std::move(leader_or);
  const CoordinatorActor& coordinator = published->coordinator();

  auto worker_cfg = std::make_unique<NodeConfig>();
  auto worker_system = std::make_unique<caf::actor_system>(*worker_cfg);
  AgentActor agent;
  {
    auto leader =
        worker_system->middleman().remote_actor<CoordinatorActor>("127.0.0.1", published->port());
    ASSERT_TRUE(leader) << worker_system->render(leader.error());
    agent = worker_system->spawn([]() -> AgentActor::behavior_type {
      return {[](const proto::ReportErrorToTaskRequest&) {},
              [](const proto::PreemptionNotice&) { return proto::PreemptionAck(); },
              [](const proto::SyncPointNotice&) {}, [](const proto::MembershipNotice&) {}};
    });
    caf::scoped_actor self{*worker_system};
    proto::RegisterTaskRequest request;
    *request.mutable_source_task() = MakeTask("worker", 0);
    request.set_incarnation(1);
    bool registered = false;
    self->request(*leader, 5s, request, agent)
        .receive([&](const proto::RegisterTaskResponse&) { registered = true; },
                 [&](caf::error& error) { ADD_FAILURE() << worker_system->render(error); });
    ASSERT_TRUE(registered);
  }
  caf::scoped_actor observer{leader_system};
  proto::WatchJobStateRequest watch;
  watch.set_version_number(-1);
  int64_t version = 0;
  observer->request(coordinator, 5s, watch)
      .receive([&](const proto::WatchJobStateResponse& r) { version = r.version_number(); },
               [&](caf::error&) {});

  auto killed = std::chrono::steady_clock::now();
  // The worker shuts down: its agent stops, then its actor system and connections go away.
  caf::anon_send_exit(agent, caf::exit_reason::kill);
  agent = nullptr;
  worker_system.reset();
  watch.set_version_number(version);
  proto::CoordinatedTaskStateInfo state;
  observer->request(coordinator, 5s, watch)
      .receive([&](const proto::WatchJobStateResponse& r) { state = r.task_state(0); },
               [&](caf::error& error) { ADD_FAILURE() << leader_system.render(error); });
  auto detected = std::chrono::steady_clock::now() - killed;
  EXPECT_EQ(state.state(), proto::TASKSTATE_ERROR);
  EXPECT_EQ(state.error_code(), static_cast<int>(absl::StatusCode::kUnavailable));
  EXPECT_THAT(state.error_message(), HasSubstr("connection to worker lost"));
  std::printf("connection loss detected after %.2f ms\n",
              std::chrono::duration<double, std::milli>(detected).count());
}

}  // namespace
}  // namespace muster
