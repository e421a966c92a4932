#include "muster/actors/supervision/launcher_registry.h"

#include <algorithm>

namespace muster {

bool LauncherRegistry::Add(const LauncherActor& launcher) {
  if (std::find(launchers_.begin(), launchers_.end(), launcher) != launchers_.end()) return false;
  launchers_.push_back(launcher);
  return true;
}

bool LauncherRegistry::Forget(const caf::actor_addr& actor) {
  auto it = std::find_if(launchers_.begin(), launchers_.end(), [&](const LauncherActor& launcher) {
    return launcher.address() == actor;
  });
  if (it == launchers_.end()) return false;
  for (Task& task : tasks_) {
    if (task.launcher == *it) task.launcher = nullptr;
  }
  launchers_.erase(it);
  return true;
}

void LauncherRegistry::NewRound() {
  ++round_;
  for (Task& task : tasks_) ++task.generation;
}

}  // namespace muster
