// The spare processes of one launcher (`muster run --spares N`): processes of the task command
// started ahead of need, with the launcher's environment, MUSTER_LEADER and MUSTER_SPARE (the
// key of the leader's store their task arrives at) and no task. A program that calls
// Agent::FromEnvironment (or Python's Agent.from_environment, or init_method="muster://") does
// its own start-up (imports, devices) and then waits there until the launcher takes it out of
// the pool for a failed task and writes that task's variables to its key. Nothing here blocks:
// the launcher actor calls Poll on its timer.
//
// A spare:  STARTED --taken for a task--> (the task's process)
//              +--exited--> gone (the pool starts another, unless spares keep failing)
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "muster/net/launcher/task_process.h"

namespace muster::cli {

class SparePool {
 public:
  struct Spare {
    std::string key;    // where its task arrives
    std::string label;  // "spare/3": the prefix of its output lines
    std::unique_ptr<TaskProcess> process;
  };
  using SayFn = std::function<void(const std::string&)>;

  // `size` spares of `command`; their keys start with `key_prefix`.
  SparePool(int size, std::string key_prefix, std::vector<std::string> command,
            TaskProcess::Environment environment);

  // Starts spares until `size` run. After 3 spares in a row exited without being taken, starts
  // none any more (said once).
  void Refill(const SayFn& say);
  // The oldest running spare, out of the pool; nullopt when none runs.
  std::optional<Spare> Take();
  // Hands their output lines to `line` (behind their label) and reaps those that exited.
  void Poll(const std::function<void(const std::string& label, absl::string_view line,
                                     bool is_stderr)>& line,
            const SayFn& say);
  // Signals every spare (the launcher stops); no more are started.
  void Stop(int signal);
  int running() const { return static_cast<int>(spares_.size()); }

 private:
  int size_;
  std::string key_prefix_;
  std::vector<std::string> command_;
  TaskProcess::Environment environment_;
  std::vector<Spare> spares_;
  int64_t started_ = 0;
  int failures_in_a_row_ = 0;
  bool stopped_ = false;
};

}  // namespace muster::cli
