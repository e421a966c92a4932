// The environment a launcher (`muster run`) gives each task process: who the task is and where
// its leader is. Muster's own programs (the example worker, the Python rendezvous) take their
// identity from it when nothing else says otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>

namespace muster {

inline constexpr char kLeaderEnv[] = "MUSTER_LEADER";          // HOST:PORT, a list, or etcd://
inline constexpr char kJobEnv[] = "MUSTER_JOB";                // the job name
inline constexpr char kTaskEnv[] = "MUSTER_TASK";              // the task id
inline constexpr char kGenerationEnv[] = "MUSTER_GENERATION";  // restarts of this task so far
inline constexpr char kRoundEnv[] = "MUSTER_ROUND";            // restarts of every task so far

// A spare process (`muster run --spares N`) has no task yet: its launcher writes the task's
// variables to this key of the leader's key-value store when a failed task needs it. The key
// ends in 128 random bits, known only to the spare (its environment) and its launcher until that
// write: nobody else can write it first (a blocking get answers the first write at once).
inline constexpr char kSpareEnv[] = "MUSTER_SPARE";

// The identity of a task a spare takes on, as NAME=VALUE lines. Only the task's identity is
// accepted (MUSTER_JOB, MUSTER_TASK, MUSTER_GENERATION, MUSTER_ROUND, RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE): a value of the key-value store never names a leader, a file or
// any other variable.
using SpareAssignment = std::vector<std::pair<std::string, std::string>>;
bool IsTaskIdentityVariable(absl::string_view name);
std::string FormatSpareAssignment(const SpareAssignment& variables);
// Possible errors: InvalidArgument naming the line at fault (not NAME=VALUE, a name outside the
// identity, more than 32 lines, a value over 4096 bytes).
absl::StatusOr<SpareAssignment> ParseSpareAssignment(absl::string_view text);

struct LaunchIdentity {
  std::string leader;
  std::string job;
  int task_id = 0;
  int64_t generation = 0;
  int64_t round = 0;
};

// FailedPrecondition saying what to do when `spare` (MUSTER_SPARE is set): a spare has no
// task until it takes one.
absl::Status NotASpare(bool spare);

// Reads one environment variable; nullopt when it is not set.
using EnvironmentLookup = std::function<std::optional<std::string>(absl::string_view name)>;
// This process's environment.
EnvironmentLookup ProcessEnvironment();

// The identity a launcher gave the process of `env`; nullopt when MUSTER_LEADER, MUSTER_JOB and
// MUSTER_TASK are not all set. Possible errors: InvalidArgument (a variable is malformed),
// FailedPrecondition (a spare without its task yet).
absl::StatusOr<std::optional<LaunchIdentity>> LaunchIdentityFrom(const EnvironmentLookup& env);
// LaunchIdentityFrom(ProcessEnvironment()).
absl::StatusOr<std::optional<LaunchIdentity>> LaunchIdentityFromEnvironment();

}  // namespace muster
