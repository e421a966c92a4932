// Builds the TaskColumns of a snapshot task by task, for tests of what reads them.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "muster/proto/observe.pb.h"

namespace muster::testing {

inline constexpr int64_t kNoStep = std::numeric_limits<int64_t>::min();

// Appends a task of `job` (a new job when it differs from the last one); returns its index.
inline int AddTask(proto::JobSnapshot& snapshot, const std::string& job,
                   proto::CoordinatedTaskState state, int64_t beat_ms = -1,
                   int64_t step = kNoStep) {
  proto::TaskColumns& c = *snapshot.mutable_tasks();
  if (c.job_names().empty() || c.job_names().rbegin()[0] != job) {
    c.add_job_names(job);
    c.add_job_sizes(0);
  }
  c.set_job_sizes(c.job_sizes_size() - 1, c.job_sizes().rbegin()[0] + 1);
  c.mutable_states()->push_back(static_cast<char>(state));
  c.add_incarnations(0);
  c.add_heartbeat_age_ms(beat_ms);
  c.add_connected_age_ms(-1);
  c.add_steps(step);
  return static_cast<int>(c.states().size()) - 1;
}

}  // namespace muster::testing
