#include "muster/messages/requests/barrier_requests.h"

#include "muster/messages/requests/wire_timeouts.h"

namespace muster::requests {

proto::BarrierRequest Barrier(const std::string& id, absl::Duration timeout,
                              const std::vector<proto::CoordinatedTask>& tasks) {
  proto::BarrierRequest request;
  request.set_barrier_id(id);
  request.set_barrier_timeout_in_ms(BarrierTimeoutMs(timeout));
  for (const auto& task : tasks) *request.add_tasks() = task;
  return request;
}

proto::CancelBarrierRequest CancelBarrier(const std::string& id) {
  proto::CancelBarrierRequest request;
  request.set_barrier_id(id);
  return request;
}

proto::GetBarrierProgressRequest GetBarrierProgress(const std::string& id) {
  proto::GetBarrierProgressRequest request;
  request.set_barrier_id(id);
  return request;
}

}  // namespace muster::requests
