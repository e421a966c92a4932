#include "muster/net/agent/distributed_runtime_client.h"

#include <absl/strings/str_cat.h>

#include "muster/messages/task_name.h"

namespace muster {

absl::StatusOr<std::unique_ptr<DistributedRuntimeClient>> DistributedRuntimeClient::Create(
    caf::actor_system& system, DistributedRuntimeClientOptions options) {
  if (options.node_id < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("node_id must be set (>= 0); got ", options.node_id));
  }
  AgentOptions agent{.leader = options.leader,
                     .job_name = options.job_name,
                     .task_id = options.node_id,
                     .heartbeat_timeout = options.heartbeat_timeout,
                     .register_timeout = options.init_timeout,
                     .shutdown_barrier_timeout = options.shutdown_timeout,
                     .rpc_timeout = options.rpc_timeout,
                     .shutdown_on_destruction = options.shutdown_on_destruction};
  auto created = Agent::Create(system, agent, options.missed_heartbeat_callback);
  if (!created.ok()) return created.status();
  return std::unique_ptr<DistributedRuntimeClient>(
      new DistributedRuntimeClient(std::move(options), *std::move(created)));
}

absl::Status DistributedRuntimeClient::Connect() {
  if (absl::Status connected = agent_->Connect(); !connected.ok()) return connected;
  return agent_->WaitAtBarrier("[xla]connect", options_.init_timeout);
}

absl::StatusOr<proto::GlobalTopologyProto> DistributedRuntimeClient::EnumerateDevices(
    const proto::LocalTopologyProto& local_topology) {
  proto::CoordinationServiceDeviceInfo local;
  proto::LocalTopologyProto* node = local.mutable_xla()->mutable_devices()->add_nodes();
  *node = local_topology;
  node->set_node_id(options_.node_id);
  auto cluster = agent_->WaitForAllTasks(local);
  if (!cluster.ok()) return cluster.status();
  return cluster->xla().devices();
}

absl::StatusOr<std::string> DistributedRuntimeClient::KeyValueGet(const std::string& key,
                                                                  absl::Duration timeout) {
  return agent_->GetKeyValue(key, timeout);
}

absl::StatusOr<std::string> DistributedRuntimeClient::KeyValueTryGet(const std::string& key) {
  return agent_->TryGetKeyValue(key);
}

absl::Status DistributedRuntimeClient::KeyValueSet(const std::string& key, const std::string& value,
                                                   bool allow_overwrite) {
  return agent_->InsertKeyValue(key, value, allow_overwrite);
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>>
DistributedRuntimeClient::KeyValueDirGet(const std::string& directory) {
  auto entries = agent_->GetKeyValueDir(directory);
  if (!entries.ok()) return entries.status();
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(entries->size());
  for (auto& entry : *entries) out.emplace_back(entry.key(), entry.value());
  return out;
}

absl::Status DistributedRuntimeClient::KeyValueDelete(const std::string& key) {
  return agent_->DeleteKeyValue(key);
}

absl::Status DistributedRuntimeClient::WaitAtBarrier(const std::string& id, absl::Duration timeout,
                                                     std::optional<std::vector<int>> node_ids) {
  std::vector<proto::CoordinatedTask> tasks;
  for (int node : node_ids.value_or(std::vector<int>{})) {
    tasks.push_back(MakeTask(options_.job_name, node));
  }
  return agent_->WaitAtBarrier(id, timeout, tasks);
}

absl::StatusOr<std::map<int, uint64_t>> DistributedRuntimeClient::GetLiveNodesWithIncarnations(
    const std::vector<int>& node_ids) {
  std::vector<proto::CoordinatedTask> tasks;
  for (int node : node_ids) tasks.push_back(MakeTask(options_.job_name, node));
  auto alive = agent_->GetAliveTasks(tasks);
  if (!alive.ok()) return alive.status();
  std::map<int, uint64_t> live;
  for (int i = 0; i < alive->alive_tasks_size(); ++i) {
    uint64_t incarnation = i < alive->incarnations_size() ? alive->incarnations(i) : 0;
    live[alive->alive_tasks(i).task_id()] = incarnation;
  }
  return live;
}

absl::StatusOr<std::vector<int>> DistributedRuntimeClient::GetLiveNodes(
    const std::vector<int>& node_ids) {
  auto live = GetLiveNodesWithIncarnations(node_ids);
  if (!live.ok()) return live.status();
  std::vector<int> nodes;
  for (const auto& [node, incarnation] : *live) nodes.push_back(node);
  return nodes;
}

absl::Status DistributedRuntimeClient::Shutdown() { return agent_->Shutdown(); }

}  // namespace muster
