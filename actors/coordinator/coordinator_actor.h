// The coordinator: the root of the leader's actor tree and the entry point that workers reach
// over the network. It routes each request to the actor that owns the state (task actors, and
// the barrier and KV directory actors), keeps a read-only view of every task's state for
// cluster-wide requests, and supervises its children: when a task actor dies with an error it
// records the failure, applies the supervision policy (propagate the error to the cluster, to
// the job, tolerate it, or fail the job) and restarts the task actor in ERROR.
//
//   RUNNING --(exit: leader shutting down)--> STOPPED (children stopped, waiters answered)
#pragma once

#include <cstdint>
#include <memory>

#include <caf/actor_system.hpp>

#include "muster/actors/cluster/device_exchange.h"
#include "muster/actors/supervision/supervision_policy.h"
#include "muster/messages/interfaces.h"
#include "muster/proto/coordination_config.pb.h"

namespace muster {

struct CoordinatorOptions {
  proto::CoordinationServiceConfig config;
  // The leader incarnation returned to every task; 0 draws a random one.
  uint64_t incarnation = 0;
  // What happens when a task fails; null: DefaultPolicy(config.recoverable_jobs).
  std::shared_ptr<SupervisionPolicy> policy;
  // Replaces the default aggregation of WaitForAllTasks device info; null: the default.
  DeviceAggregator device_aggregator;
};

// Spawns a coordinator for the jobs in `options.config`.
CoordinatorActor SpawnCoordinator(caf::actor_system& system, CoordinatorOptions options);

}  // namespace muster
