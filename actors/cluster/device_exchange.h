// WaitForAllTasks: every task contributes its local devices and waits until all tasks did;
// then every caller gets the same cluster device info. The default aggregation concatenates
// TensorFlow device lists in (job, task id) order, or, for XLA topologies, builds one
// GlobalTopologyProto whose nodes follow (job, task id) order and whose devices get dense
// global ids 0..N-1 in that node order, then in each node's device order. A user-supplied
// aggregator may replace it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/status/statusor.h>
#include <caf/typed_response_promise.hpp>

#include "muster/actors/cluster/cluster_view.h"
#include "muster/messages/vocabulary/proto_inspect.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

// Aggregates the devices of every task; `tasks` and `devices` are parallel, in task order.
using DeviceAggregator = std::function<absl::StatusOr<proto::CoordinationServiceDeviceInfo>(
    const std::vector<proto::CoordinatedTask>& tasks,
    const std::vector<proto::CoordinationServiceDeviceInfo>& devices)>;

absl::StatusOr<proto::CoordinationServiceDeviceInfo> DefaultDeviceAggregation(
    const std::vector<proto::CoordinatedTask>& tasks,
    const std::vector<proto::CoordinationServiceDeviceInfo>& devices);

class DeviceExchange {
 public:
  using Promise = caf::typed_response_promise<proto::WaitForAllTasksResponse>;

  DeviceExchange(DeviceAggregator aggregator, uint64_t leader_incarnation);
  // Records `task`'s devices and answers everyone once all tasks called; after that, answers at
  // once with the stored result. A later call of a task with other devices than its first gets
  // Internal ("Different local topology"), as in the reference.
  void Join(const ClusterView& view, const proto::WaitForAllTasksRequest& request, Promise promise);
  // Fails the exchange for everyone when a task that has to take part fails before it is done.
  void OnTaskState(const proto::CoordinatedTaskStateInfo& info);
  // Answers every waiting call with `status` (the exchange is being replaced).
  void Abort(const absl::Status& status);

 private:
  void Finish(absl::StatusOr<proto::WaitForAllTasksResponse> result);

  DeviceAggregator aggregator_;
  uint64_t leader_incarnation_;
  absl::flat_hash_map<std::string, proto::CoordinationServiceDeviceInfo> devices_;
  std::vector<Promise> waiting_;
  std::optional<absl::StatusOr<proto::WaitForAllTasksResponse>> result_;
};

}  // namespace muster
