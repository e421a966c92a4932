#include "muster/net/process/launch_environment.h"

#include <cstdlib>

#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>

namespace muster {
namespace {

absl::Status ParseNumber(const char* name, const std::optional<std::string>& text, int64_t* out) {
  if (!text) return absl::OkStatus();
  if (!absl::SimpleAtoi(*text, out) || *out < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "=\"", text->substr(0, 40), "\" is not a non-negative number"));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsTaskIdentityVariable(absl::string_view name) {
  static constexpr absl::string_view kNames[] = {
      kJobEnv, kTaskEnv,     kGenerationEnv, kRoundEnv,
      "RANK",  "WORLD_SIZE", "LOCAL_RANK",   "LOCAL_WORLD_SIZE"};
  for (absl::string_view known : kNames) {
    if (name == known) return true;
  }
  return false;
}

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
    if (equals == absl::string_view::npos || !IsTaskIdentityVariable(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("a spare's assignment line \"", line.substr(0, 80),
                       "\" is not NAME=VALUE of a variable of a task's identity"));
    }
    if (line.size() - equals - 1 > 4096 || variables.size() >= 32) {
      return absl::InvalidArgumentError("a spare's assignment is too large");
    }
    variables.emplace_back(name, line.substr(equals + 1));
  }
  return variables;
}

absl::Status NotASpare(bool spare) {
  if (!spare) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "this process is a spare of muster run --spares and has no task yet: take one first "
      "(Agent::TakeSpareAssignment; Python: muster.take_spare_assignment(); "
      "Agent::FromEnvironment, Agent.from_environment() and muster:// do)");
}

absl::StatusOr<std::optional<LaunchIdentity>> LaunchIdentityFrom(const EnvironmentLookup& env) {
  if (absl::Status s = NotASpare(env(kSpareEnv).has_value()); !s.ok()) return s;
  std::optional<std::string> leader = env(kLeaderEnv), job = env(kJobEnv), task = env(kTaskEnv);
  if (!leader || !job || !task) return std::nullopt;
  LaunchIdentity identity{.leader = *leader, .job = *job};
  int64_t task_id = 0;
  if (absl::Status s = ParseNumber(kTaskEnv, task, &task_id); !s.ok()) return s;
  if (task_id > INT32_MAX)
    return absl::InvalidArgumentError(absl::StrCat(kTaskEnv, " is too large"));
  identity.task_id = static_cast<int>(task_id);
  if (absl::Status s = ParseNumber(kGenerationEnv, env(kGenerationEnv), &identity.generation);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseNumber(kRoundEnv, env(kRoundEnv), &identity.round); !s.ok()) {
    return s;
  }
  if (identity.leader.empty() || identity.job.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kLeaderEnv, " and ", kJobEnv, " must not be empty"));
  }
  return identity;
}

absl::StatusOr<std::optional<LaunchIdentity>> LaunchIdentityFromEnvironment() {
  return LaunchIdentityFrom(ProcessEnvironment());
}

EnvironmentLookup ProcessEnvironment() {
  return [](absl::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

}  // namespace muster
