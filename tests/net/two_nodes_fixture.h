// Two actor systems in one test process, talking over real TCP on 127.0.0.1: a leader's node
// (where a test starts its Leader) and a worker's node.
#pragma once

#include <memory>

#include <gtest/gtest.h>
#include <caf/actor_system.hpp>

#include "muster/net/agent/agent.h"
#include "muster/net/leader/leader.h"
#include "muster/net/transport/node_config.h"

namespace muster::testing {

// One job, "worker", of `tasks` tasks, with a heartbeat timeout of 10 s.
inline CoordinatorOptions Jobs(int tasks) {
  CoordinatorOptions options;
  auto* job = options.config.add_coordinated_job_list();
  job->set_name("worker");
  job->set_num_tasks(tasks);
  options.config.set_heartbeat_timeout_in_ms(10'000);
  return options;
}

class TwoNodesTest : public ::testing::Test {
 protected:
  NodeConfig leader_config_;
  caf::actor_system leader_system_{leader_config_};
  NodeConfig worker_config_{WorkerNodeOptions()};
  caf::actor_system worker_system_{worker_config_};
  std::unique_ptr<Leader> leader_;  // destroyed before the systems
};

}  // namespace muster::testing
