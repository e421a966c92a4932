// The launcher actor's state (launcher_actor.h), shared by the files that make up its behaviour:
// launcher_actor.cc (processes, restarts, events), launcher_spares.cc (--spares) and
// launcher_finish.cc (when the launcher is done). Internal to net/launcher.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_clock.hpp>
#include <caf/stateful_actor.hpp>

#include "muster/net/launcher/launcher_actor.h"
#include "muster/net/launcher/spare_pool.h"
#include "muster/net/launcher/task_process.h"

namespace muster::cli::launcher_internal {

enum class Phase { kIdle, kRunning, kReported, kStopping, kFinished };

struct TaskEntry {
  proto::CoordinatedTask task;
  std::string label;  // "worker/0": the prefix of its output lines
  int rank = 0;
  int local_rank = 0;
  int64_t generation = 0;
  std::unique_ptr<TaskProcess> process;
  Phase phase = Phase::kIdle;
  std::optional<int64_t> restart_to;     // the generation to start once the process is gone
  caf::actor_clock::time_point kill_at;  // while stopping: SIGKILL then
  std::optional<ProcessExit> last_exit;
  std::optional<std::string> failure;  // why the task failed for good
  // An exit not reported yet (the leader was lost, or its report bounced): reported again by
  // the tick once a leader is there, from `report_at` (launcher_follow.cc).
  std::optional<ProcessExit> unreported;
  caf::actor_clock::time_point report_at;
};

struct LauncherState {
  static inline const char* name = "muster.launcher";
  LauncherConfig config;
  LauncherListener listener;
  std::vector<TaskEntry> tasks;
  int world_size = 0;
  int64_t round = 0;
  bool registered = false;
  bool following = false;       // the leader was lost; looking for the next one (config.follow)
  uint64_t follow_attempt = 0;  // the current search; answers of an earlier one are dropped
  caf::actor_clock::time_point follow_deadline;  // no leader took it back by then: give up
  bool stopping = false;  // no restarts any more: a stop signal, a lost leader, a failed job
  int stop_signal = 0;
  std::optional<std::string> job_error;                          // what ended the job
  std::optional<caf::actor_clock::time_point> job_end_deadline;  // then SIGTERM what still runs
  // The task whose failure ended the job, named with the exits that follow.
  std::optional<proto::CoordinatedTask> failed_task;
  int pending_reports = 0;
  bool asking_cluster = false;
  bool done = false;
  std::unique_ptr<SparePool> spares;       // with --spares
  bool spares_stopped_at_the_end = false;  // every task finished: done once the spares are gone
};

using LauncherPointer = LauncherControlActor::stateful_pointer<LauncherState>;

// launcher_actor.cc
void Say(const std::string& line);
TaskEntry* Find(LauncherPointer self, const proto::CoordinatedTask& task);
// MUSTER_LEADER, MASTER_ADDR and MASTER_PORT for the leader of `config` (leader_address,
// leader_registry).
TaskProcess::Environment LeaderVariables(const LauncherConfig& config);
// The variables of `entry`'s process: the launcher's, then the task's own.
TaskProcess::Environment EnvironmentOf(LauncherPointer self, const TaskEntry& entry);
// Writes the task output gathered so far, before any line of the launcher's own.
void Flush(std::string& out, std::string& err);
void Finish(LauncherPointer self, int code, const std::string& message);
// Starts `entry`'s process of `generation` (from a spare when one runs).
void Start(LauncherPointer self, TaskEntry& entry, int64_t generation);
// Asks the process to leave: `signal` now, SIGKILL after the stop timeout.
void StopProcess(LauncherPointer self, TaskEntry& entry, int signal);
void StopAll(LauncherPointer self, int signal);
// The job is over (`why`): no restarts from now on.
void EndJob(LauncherPointer self, const std::string& why);
// Tells the leader that `entry`'s process exited without being told to: the policy decides.
void Report(LauncherPointer self, TaskEntry& entry, const ProcessExit& exit);

// launcher_follow.cc: an HA job's leader was lost (FOLLOWING): finds the next active leader and
// registers with it again, or stops every task when none takes the launcher back in time.
void FollowLeader(LauncherPointer self);
// An exit whose report could not reach the leader: kept for ReportKeptExits.
void KeepExit(LauncherPointer self, TaskEntry& entry, const ProcessExit& exit);
// Reports the kept exits whose time came, while a leader is there (from the tick).
void ReportKeptExits(LauncherPointer self, caf::actor_clock::time_point now);

// launcher_spares.cc
std::unique_ptr<SparePool> MakeSpares(const LauncherConfig& config);  // null without --spares
// Stops the spares: SIGTERM now, SIGKILL after the stop timeout.
void StopSpares(LauncherPointer self);
// Gives `entry` (its generation set) a running spare as its process; false when none runs.
bool StartFromSpare(LauncherPointer self, TaskEntry& entry);
// Their output (into `out` and `err`), their exits, and new ones to replace them.
void PollSpares(LauncherPointer self, caf::actor_clock::time_point now, std::string& out,
                std::string& err);

// launcher_finish.cc: finishes the launcher once every process is gone, no exit waits for the
// policy and (unless the job failed or a signal stops it) no task of the job is connected.
void CheckFinished(LauncherPointer self);

}  // namespace muster::cli::launcher_internal
