// The spare processes of one launcher (`muster run --spares N`): processes of the task command
// started ahead of need, with the launcher's environment, MUSTER_LEADER, MASTER_ADDR/PORT and
// MUSTER_SPARE (the key of the leader's store their task arrives at, ending in 128 random bits)
// and no task. A program that calls Agent::FromEnvironment (or Python's
// Agent.from_environment, or init_method="muster://") does its own start-up (imports) and
// then waits there until the launcher takes it out of the pool for a restarted task and writes
// that task's identity to its key. Nothing here blocks: the launcher actor calls Poll on its
// timer.
//
// A spare:  RUNNING --taken for a task--> (the task's process)
//              +--exited on its own--> gone (another starts; after 3 such exits, none any more)
//              +--Stop--> STOPPING --exited (SIGKILL after the deadline)--> gone
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_clock.hpp>

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
  using LineFn =
      std::function<void(const std::string& label, absl::string_view line, bool is_stderr)>;

  // `size` spares of `command`; their keys start with `key_prefix`.
  SparePool(int size, std::string key_prefix, std::vector<std::string> command,
            TaskProcess::Environment environment);

  // Starts spares until `size` run, unless stopped or failed (3 spares exited on their own).
  void Refill(const SayFn& say);
  // The oldest spare still running, out of the pool (those found exited are counted as exits on
  // their own); nullopt when none runs or the pool is stopped.
  std::optional<Spare> Take(const SayFn& say);
  // Hands their output lines to `line` (behind their label), reaps those that exited, and
  // sends SIGKILL to those still running past the stop deadline.
  void Poll(caf::actor_clock::time_point now, const LineFn& line, const SayFn& say);
  // Sends `signal` to every spare, and SIGKILL at `kill_at` to those still running; no more
  // are started or taken.
  void Stop(int signal, caf::actor_clock::time_point kill_at);
  bool stopped() const { return stopped_; }
  int running() const { return static_cast<int>(spares_.size()); }

 private:
  // Counts an exit on its own; says so.
  void Exited(const Spare& spare, const ProcessExit& exit, const SayFn& say);

  int size_;
  std::string key_prefix_;
  std::vector<std::string> command_;
  TaskProcess::Environment environment_;
  std::vector<Spare> spares_;
  int64_t started_ = 0;
  int failures_ = 0;
  bool stopped_ = false;
  std::optional<caf::actor_clock::time_point> kill_at_;
};

}  // namespace muster::cli
