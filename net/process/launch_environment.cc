#include "muster/net/process/launch_environment.h"

#include <cstdlib>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>

namespace muster {
namespace {

absl::Status ParseNumber(const char* name, const char* text, int64_t* out) {
  if (text == nullptr) return absl::OkStatus();
  if (!absl::SimpleAtoi(text, out) || *out < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "=\"", text, "\" is not a non-negative number"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<LaunchIdentity>> LaunchIdentityFromEnvironment() {
  const char* leader = std::getenv(kLeaderEnv);
  const char* job = std::getenv(kJobEnv);
  const char* task = std::getenv(kTaskEnv);
  if (leader == nullptr || job == nullptr || task == nullptr) return std::nullopt;
  LaunchIdentity identity{.leader = leader, .job = job};
  int64_t task_id = 0;
  if (absl::Status s = ParseNumber(kTaskEnv, task, &task_id); !s.ok()) return s;
  if (task_id > INT32_MAX)
    return absl::InvalidArgumentError(absl::StrCat(kTaskEnv, " is too large"));
  identity.task_id = static_cast<int>(task_id);
  if (absl::Status s =
          ParseNumber(kGenerationEnv, std::getenv(kGenerationEnv), &identity.generation);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseNumber(kRoundEnv, std::getenv(kRoundEnv), &identity.round); !s.ok()) {
    return s;
  }
  if (identity.leader.empty() || identity.job.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kLeaderEnv, " and ", kJobEnv, " must not be empty"));
  }
  return identity;
}

}  // namespace muster
