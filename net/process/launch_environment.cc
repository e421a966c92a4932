#include "muster/net/process/launch_environment.h"

#include <cstdlib>

#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>

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

bool GivenByALauncher(absl::string_view name) {
  static constexpr absl::string_view kNames[] = {
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};
  for (absl::string_view known : kNames) {
    if (name == known) return true;
  }
  return absl::StartsWith(name, "MUSTER_") && name != kSpareEnv &&
         name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == absl::string_view::npos;
}

}  // namespace

std::string FormatSpareAssignment(const SpareAssignment& variables) {
  std::string text;
  for (const auto& [name, value] : variables) absl::StrAppend(&text, name, "=", value, "\n");
  return text;
}

absl::StatusOr<SpareAssignment> ParseSpareAssignment(absl::string_view text) {
  SpareAssignment variables;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    size_t equals = line.find('=');
    absl::string_view name = line.substr(0, equals);
    if (equals == absl::string_view::npos || !GivenByALauncher(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("a spare's assignment line \"", line.substr(0, 80),
                       "\" is not NAME=VALUE of a variable a launcher gives its tasks"));
    }
    if (line.size() - equals - 1 > 4096 || variables.size() >= 32) {
      return absl::InvalidArgumentError("a spare's assignment is too large");
    }
    variables.emplace_back(name, line.substr(equals + 1));
  }
  return variables;
}

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
