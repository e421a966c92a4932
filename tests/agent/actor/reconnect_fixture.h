// The fixture of the agent's reconnect tests (agent_reconnect_test.cc against a real
// coordinator, agent_resend_test.cc against a recording stand-in): agents with a reconnect
// timeout whose next leader comes from `next_leader_` (AgentConfig::reconnect_local_leader),
// requests, and a way to kill the current leader.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "muster/messages/task_name.h"
#include "muster/net/agent/actor/agent_actor.h"
#include "tests/testing/deterministic_fixture.h"

namespace muster::testing {

class ReconnectFixture : public DeterministicTest {
 protected:
  // Task `task` of job "worker", incarnation 100 + task, heartbeat timeout 10 s.
  AgentControlActor Spawn(int task, caf::timespan reconnect_timeout = std::chrono::seconds(30)) {
    AgentConfig config;
    config.task = MakeTask("worker", task);
    config.incarnation = 100 + task;
    config.local_leader = leader_;
    config.heartbeat_timeout = std::chrono::seconds(10);
    config.leader_reconnect_timeout = reconnect_timeout;
    config.reconnect_local_leader = [next = next_leader_] { return *next; };
    config.on_error = [errors = errors_](const absl::Status& s) { errors->push_back(s); };
    return Keep(SpawnAgentActor(system_, config));
  }

  absl::Status Connect(const AgentControlActor& agent) {
    return Call<proto::RegisterTaskResponse>(agent, caf::connect_atom::value).status();
  }

  AgentStatus StatusOf(const AgentControlActor& agent) {
    return *Call<AgentStatus>(agent, agent_state_atom::value);
  }

  void KillLeader() {
    caf::anon_send_exit(leader_, caf::exit_reason::kill);
    Drain();
  }

  static proto::GetKeyValueRequest Get(const std::string& key) {
    proto::GetKeyValueRequest request;
    request.set_key(key);
    return request;
  }

  static proto::InsertKeyValueRequest Insert(const std::string& key, const std::string& value) {
    proto::InsertKeyValueRequest request;
    request.mutable_kv()->set_key(key);
    request.mutable_kv()->set_value(value);
    return request;
  }

  static proto::BarrierRequest Barrier(const std::string& id) {
    proto::BarrierRequest request;
    request.set_barrier_id(id);
    request.set_barrier_timeout_in_ms(60'000);
    return request;
  }

  CoordinatorActor leader_;  // the agents' leader at Spawn
  // What the agents get when they next try to reconnect (null: no leader yet).
  std::shared_ptr<CoordinatorActor> next_leader_ = std::make_shared<CoordinatorActor>();
  std::shared_ptr<std::vector<absl::Status>> errors_ =
      std::make_shared<std::vector<absl::Status>>();
};

}  // namespace muster::testing
