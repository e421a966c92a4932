// The environment a launcher (`muster run`) gives each task process: who the task is and where
// its leader is. Muster's own programs (the example worker, the Python rendezvous) take their
// identity from it when nothing else says otherwise.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <absl/status/statusor.h>

namespace muster {

inline constexpr char kLeaderEnv[] = "MUSTER_LEADER";          // HOST:PORT
inline constexpr char kJobEnv[] = "MUSTER_JOB";                // the job name
inline constexpr char kTaskEnv[] = "MUSTER_TASK";              // the task id
inline constexpr char kGenerationEnv[] = "MUSTER_GENERATION";  // restarts of this task so far
inline constexpr char kRoundEnv[] = "MUSTER_ROUND";            // restarts of every task so far

struct LaunchIdentity {
  std::string leader;
  std::string job;
  int task_id = 0;
  int64_t generation = 0;
  int64_t round = 0;
};

// The identity a launcher gave this process; nullopt when MUSTER_LEADER, MUSTER_JOB and
// MUSTER_TASK are not all set. Possible errors: InvalidArgument (a variable is malformed).
absl::StatusOr<std::optional<LaunchIdentity>> LaunchIdentityFromEnvironment();

}  // namespace muster
