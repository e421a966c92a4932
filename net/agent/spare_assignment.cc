// Agent::TakeSpareAssignment: a spare process of `muster run --spares N` waits at the leader's
// key-value store for the task its launcher gives it, then takes on that task's variables.
#include <cstdlib>

#include <absl/strings/str_cat.h>

#include "muster/net/agent/agent.h"
#include "muster/net/process/launch_environment.h"

namespace muster {

absl::StatusOr<bool> Agent::TakeSpareAssignment(caf::actor_system& system,
                                                const AgentOptions& options) {
  const char* key = std::getenv(kSpareEnv);
  if (key == nullptr) return false;
  const char* leader = std::getenv(kLeaderEnv);
  if (leader == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(kSpareEnv, " is set but ", kLeaderEnv,
                                                   " is not: a spare's launcher sets both"));
  }
  // Not a task: its key-value calls need no registration. The caller's connection settings
  // (token, timeouts) apply.
  AgentOptions waiting = options;
  waiting.leader = leader;
  waiting.job_name = "spare";
  waiting.task_id = 0;
  waiting.claim = false;
  waiting.local_leader = CoordinatorActor{};
  waiting.wait_for_leader = true;
  waiting.shutdown_on_destruction = false;
  auto waiter = Create(system, std::move(waiting), [](const absl::Status&) {});
  if (!waiter.ok()) return waiter.status();
  absl::StatusOr<std::string> value = (*waiter)->GetKeyValue(key);
  if (!value.ok()) return value.status();
  (void)(*waiter)->DeleteKeyValue(key);  // the launcher's note is read: nothing else needs it
  waiter->reset();  // its session's threads (an etcd:// read) must not read the environment now
  absl::StatusOr<SpareAssignment> assignment = ParseSpareAssignment(*value);
  if (!assignment.ok()) return assignment.status();
  // Before any other thread of the program reads the environment (CAF's do not, nor do agents'
  // sessions: they take etcd's settings when they are created).
  for (const auto& [name, variable] : *assignment) {
    ::setenv(name.c_str(), variable.c_str(), /*overwrite=*/1);
  }
  ::unsetenv(kSpareEnv);
  return true;
}

}  // namespace muster
