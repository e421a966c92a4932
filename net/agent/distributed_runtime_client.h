// The XLA distributed-runtime client on Muster: the seed protocol's Connect, EnumerateDevices,
// key-value and barrier calls, as the XLA/JAX runtime uses them. Nodes are the tasks 0..n-1 of
// one job. Built on Agent; the same thread rules apply (blocking calls from any thread except
// inside an actor).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <absl/status/statusor.h>
#include <absl/time/time.h>

#include "muster/net/agent/agent.h"

namespace muster {

struct DistributedRuntimeClientOptions {
  std::string leader = "127.0.0.1:7400";
  std::string job_name = "xla";
  int node_id = -1;
  // Connect waits this long for every node (registration and the connect barrier).
  absl::Duration init_timeout = absl::Minutes(5);
  // Zero: the leader's (AgentOptions::heartbeat_timeout); longer than the leader's: Connect()
  // fails with FailedPrecondition.
  absl::Duration heartbeat_timeout = absl::ZeroDuration();
  absl::Duration shutdown_timeout = absl::Minutes(5);
  absl::Duration rpc_timeout = absl::Seconds(120);
  // Called when the job fails (another node died, the leader was lost, ...).
  Agent::ErrorCallback missed_heartbeat_callback;
  // false: destroying a connected client only drops its connection (the leader treats the
  // node as lost) instead of shutting down; see AgentOptions::shutdown_on_destruction.
  bool shutdown_on_destruction = true;
};

class DistributedRuntimeClient {
 public:
  // Possible errors: InvalidArgument (node id < 0, bad leader address).
  static absl::StatusOr<std::unique_ptr<DistributedRuntimeClient>> Create(
      caf::actor_system& system, DistributedRuntimeClientOptions options);

  // Registers this node and blocks until every node of the job connected.
  absl::Status Connect();
  // Exchanges local topologies; returns the global topology with dense global device ids
  // (node order, then device order).
  absl::StatusOr<proto::GlobalTopologyProto> EnumerateDevices(
      const proto::LocalTopologyProto& local_topology);
  absl::StatusOr<std::string> KeyValueGet(const std::string& key, absl::Duration timeout);
  // The value if the key exists now; NotFound otherwise (never waits).
  absl::StatusOr<std::string> KeyValueTryGet(const std::string& key);
  absl::Status KeyValueSet(const std::string& key, const std::string& value,
                           bool allow_overwrite = false);
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> KeyValueDirGet(
      const std::string& directory);
  absl::Status KeyValueDelete(const std::string& key);
  // `node_ids` empty: every node.
  absl::Status WaitAtBarrier(const std::string& id, absl::Duration timeout,
                             std::optional<std::vector<int>> node_ids = std::nullopt);
  // The live nodes among `node_ids`, each with its incarnation. Like a barrier: it returns
  // once every live node of the set has called it with the same set, and they all get the same
  // answer. Possible errors: InvalidArgument (empty or unknown set), FailedPrecondition.
  absl::StatusOr<std::map<int, uint64_t>> GetLiveNodesWithIncarnations(
      const std::vector<int>& node_ids);
  absl::StatusOr<std::vector<int>> GetLiveNodes(const std::vector<int>& node_ids);
  // Leaves the job (through the leader's shutdown barrier when it has one). Possible errors:
  // FailedPrecondition (the node is in ERROR, e.g. after missed_heartbeat_callback: it leaves
  // locally without a request to the leader), Internal (the shutdown barrier failed).
  absl::Status Shutdown();

  Agent& agent() { return *agent_; }

 private:
  DistributedRuntimeClient(DistributedRuntimeClientOptions options, std::unique_ptr<Agent> agent)
      : options_(std::move(options)), agent_(std::move(agent)) {}

  DistributedRuntimeClientOptions options_;
  std::unique_ptr<Agent> agent_;
};

}  // namespace muster
