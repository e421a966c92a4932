// The launchers a coordinator knows (`muster run` processes that start and restart tasks), which
// launcher runs which task, each task's generation (every restart of a task starts a new one)
// and the job's round (every restart of all tasks together starts a new one). Plain data: the
// coordinator monitors the launchers and tells them its decisions.
#pragma once

#include <cstdint>
#include <vector>

#include <caf/actor_addr.hpp>

#include "muster/messages/vocabulary/interfaces.h"

namespace muster {

class LauncherRegistry {
 public:
  LauncherRegistry() = default;
  // For a cluster of `tasks` tasks (indexes of ClusterView::tasks()), generation 0, round 0.
  explicit LauncherRegistry(size_t tasks) : tasks_(tasks) {}

  // Adds a launcher; true when it is new (the coordinator monitors it then).
  bool Add(const LauncherActor& launcher);
  // Forgets a launcher that went away (its tasks have none now); false for other actors.
  bool Forget(const caf::actor_addr& actor);
  const std::vector<LauncherActor>& launchers() const { return launchers_; }
  bool empty() const { return launchers_.empty(); }

  // The launcher of the task at `index` (none when no launcher runs it).
  const LauncherActor& LauncherOf(uint32_t index) const { return tasks_[index].launcher; }
  void Assign(uint32_t index, LauncherActor launcher) {
    tasks_[index].launcher = std::move(launcher);
  }

  int64_t generation(uint32_t index) const { return tasks_[index].generation; }
  void set_generation(uint32_t index, int64_t generation) { tasks_[index].generation = generation; }
  // The task at `index` is restarted: its next process is a new generation.
  void Restart(uint32_t index) { ++tasks_[index].generation; }
  // Every task is restarted together: a new round, and a new generation of every task.
  void NewRound();

  int64_t round() const { return round_; }
  void set_round(int64_t round) { round_ = round; }

 private:
  struct Task {
    LauncherActor launcher;
    int64_t generation = 0;
  };
  std::vector<LauncherActor> launchers_;
  std::vector<Task> tasks_;
  int64_t round_ = 0;
};

}  // namespace muster
