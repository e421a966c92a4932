// One builder per barrier verb (see kv_requests.h): what the C++ Agent, the Python binding and
// the benchmarks send. A timeout of absl::InfiniteDuration() is "no timeout".
#pragma once

#include <string>
#include <vector>

#include <absl/time/time.h>

#include "muster/proto/coordination_service.pb.h"

namespace muster::requests {

// Waits at barrier `id` with `tasks` (empty: every task of the job), at most `timeout`.
proto::BarrierRequest Barrier(const std::string& id, absl::Duration timeout,
                              const std::vector<proto::CoordinatedTask>& tasks = {});
proto::CancelBarrierRequest CancelBarrier(const std::string& id);
proto::GetBarrierProgressRequest GetBarrierProgress(const std::string& id);

}  // namespace muster::requests
