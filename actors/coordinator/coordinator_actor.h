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
#include <string>

#include <caf/actor_system.hpp>

#include "muster/actors/cluster/device_exchange.h"
#include "muster/actors/durability/state_writer_actor.h"
#include "muster/actors/observe/events/event_log_actor.h"
#include "muster/actors/supervision/supervision_policy.h"
#include "muster/messages/vocabulary/interfaces.h"
#include "muster/proto/coordination_config.pb.h"
#include "muster/proto/leader_state.pb.h"

namespace muster {

class LeaderMetrics;

struct CoordinatorOptions {
  proto::CoordinationServiceConfig config;
  // The leader incarnation returned to every task; 0 draws a random one.
  uint64_t incarnation = 0;
  // What happens when a task fails; null: DefaultPolicy(config.recoverable_jobs).
  std::shared_ptr<SupervisionPolicy> policy;
  // Replaces the default aggregation of WaitForAllTasks device info; null: the default.
  DeviceAggregator device_aggregator;
  // The state dir (muster serve --state-dir). Leader::Start (net/leader/leader.h) opens it and
  // fills in the two fields below; SpawnCoordinator itself only uses those.
  std::string state_dir;
  // Durable state: the writer that records
  // every change before it is acknowledged. Null: memory only.
  StateWriterActor state_writer;
  // What a restarted leader recovered from its state dir (null: nothing). Tasks recorded as
  // CONNECTED start CONNECTED with their incarnation and have `reconnect_window` to register
  // again (RegisterTaskRequest.reconnect) before they fail like a task that missed its
  // heartbeats; keys, barrier results and the job-state version continue where they were.
  std::shared_ptr<const proto::RecoveredState> recovered;
  // 0: the heartbeat timeout.
  caf::timespan reconnect_window{0};
  // The calendar time this leader started, in Unix milliseconds, recorded with the durable
  // state for operators (Leader::Start sets it; the coordinator reads no clock but its actor
  // clock, and times nothing by this).
  int64_t started_unix_ms = 0;
  // The event file (muster serve --events): Leader::Start opens it for appending and gives the
  // event log a writer of it; empty: the events stay in memory only.
  std::string events_file;
  // The event log that keeps the job's events (docs/operations.md, "The event log") and answers
  // WatchEvents; Leader::Start always spawns one. Null: no event is built or sent, and
  // WatchEvents answers with none.
  EventLogActor events;
  // What the leader's actors count (KV operations, durable writes; actors/observe/); null:
  // nothing is counted.
  std::shared_ptr<LeaderMetrics> metrics;
  // The leader's port for direct key-value calls (net/leader/direct/direct_endpoint.h), told to
  // every task that registers; 0: none.
  uint16_t direct_port = 0;
};

// Spawns a coordinator for the jobs in `options.config`.
CoordinatorActor SpawnCoordinator(caf::actor_system& system, CoordinatorOptions options);

}  // namespace muster
