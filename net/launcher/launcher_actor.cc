#include "muster/net/launcher/launcher_actor.h"

#include <signal.h>

#include <cstdio>
#include <memory>
#include <optional>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "muster/messages/requests/kv_requests.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/launcher/spare_pool.h"
#include "muster/net/process/launch_environment.h"

namespace muster::cli {
namespace {

constexpr auto kTick = std::chrono::milliseconds(20);

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
};

struct LauncherState {
  static inline const char* name = "muster.launcher";
  LauncherConfig config;
  LauncherListener listener;
  std::vector<TaskEntry> tasks;
  int world_size = 0;
  int64_t round = 0;
  bool registered = false;
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

void Say(const std::string& line) {
  std::fprintf(stderr, "muster run: %s\n", line.c_str());
  std::fflush(stderr);
}

TaskEntry* Find(LauncherPointer self, const proto::CoordinatedTask& task) {
  for (TaskEntry& entry : self->state.tasks) {
    if (SameTask(entry.task, task)) return &entry;
  }
  return nullptr;
}

TaskProcess::Environment EnvironmentOf(LauncherPointer self, const TaskEntry& entry) {
  const auto& st = self->state;
  const std::string& address = st.config.leader_address;
  size_t colon = address.rfind(':');
  TaskProcess::Environment env = st.config.environment;
  env.insert(env.end(), {{kLeaderEnv, address},
                         {kJobEnv, entry.task.job_name()},
                         {kTaskEnv, absl::StrCat(entry.task.task_id())},
                         {kGenerationEnv, absl::StrCat(entry.generation)},
                         {kRoundEnv, absl::StrCat(st.round)},
                         {"RANK", absl::StrCat(entry.rank)},
                         {"WORLD_SIZE", absl::StrCat(st.world_size)},
                         {"LOCAL_RANK", absl::StrCat(entry.local_rank)},
                         {"LOCAL_WORLD_SIZE", absl::StrCat(st.tasks.size())},
                         {"MASTER_ADDR", address.substr(0, colon)},
                         {"MASTER_PORT", address.substr(colon + 1)}});
  if (auto own = st.config.task_environment.find(TaskName(entry.task));
      own != st.config.task_environment.end()) {
    env.insert(env.end(), own->second.begin(), own->second.end());
  }
  return env;
}

void StopAll(LauncherPointer self, int signal);
void EndJob(LauncherPointer self, const std::string& why);
void Report(LauncherPointer self, TaskEntry& entry, const ProcessExit& exit);

void Finish(LauncherPointer self, int code, const std::string& message) {
  if (self->state.done) return;
  self->state.done = true;
  self->send(self->state.listener, launcher_done_atom::value, code, message);
  self->quit();
}

// Stops the spares: SIGTERM now, SIGKILL after the stop timeout.
void StopSpares(LauncherPointer self) {
  auto& st = self->state;
  if (st.spares) st.spares->Stop(SIGTERM, self->clock().now() + st.config.stop_timeout);
}

// The spare becomes `entry`'s process: the task's identity goes to the spare's key, where it
// waits for it. If the leader does not take the write, the spare is stopped and a new process
// starts for the same generation (no failure of the task's), and no spare is used any more.
void TakeSpare(LauncherPointer self, TaskEntry& entry, SparePool::Spare spare) {
  SpareAssignment identity;
  for (auto& [name, value] : EnvironmentOf(self, entry)) {
    if (IsTaskIdentityVariable(name)) identity.emplace_back(name, value);
  }
  const pid_t pid = spare.process->pid();
  entry.process = std::move(spare.process);
  entry.phase = Phase::kRunning;
  Say(absl::StrCat("started ", TaskName(entry.task), " (pid ", pid, ", generation ",
                   entry.generation, ") from ", spare.label));
  proto::CoordinatedTask task = entry.task;
  const int64_t generation = entry.generation;
  self->request(self->state.config.leader, std::chrono::seconds(10),
                requests::InsertKeyValue(spare.key, FormatSpareAssignment(identity),
                                         /*allow_overwrite=*/true))
      .then([](const proto::InsertKeyValueResponse&) {},
            [self, task, generation, pid](const caf::error& error) {
              Say(absl::StrCat("could not give ", TaskName(task), " to its spare (pid ", pid,
                               "): ", StatusText(ToStatus(error)),
                               "; starting a new process instead, and no more spares"));
              StopSpares(self);
              TaskEntry* e = Find(self, task);
              if (e && e->process && e->process->pid() == pid && e->generation == generation) {
                e->restart_to = generation;
                e->process->Signal(SIGKILL);
                e->phase = Phase::kStopping;
                e->kill_at = self->clock().now();
              }
            });
}

void Start(LauncherPointer self, TaskEntry& entry, int64_t generation) {
  entry.generation = generation;
  entry.restart_to.reset();
  entry.failure.reset();
  entry.last_exit.reset();
  if (self->state.stopping) {
    entry.phase = Phase::kFinished;
    return;
  }
  if (auto& spares = self->state.spares; spares && generation > 0) {
    if (std::optional<SparePool::Spare> spare = spares->Take(Say)) {
      TakeSpare(self, entry, *std::move(spare));
      spares->Refill(Say);
      return;
    }
  }
  auto process = TaskProcess::Start(self->state.config.command, EnvironmentOf(self, entry));
  if (!process.ok()) {
    Say(absl::StrCat(TaskName(entry.task), " could not be started: ", process.status().message()));
    // As a process that exited with 127 (as a shell says "not found"): the policy decides, and
    // every launcher hears of it, so that no task waits for this one forever.
    Report(self, entry, ProcessExit{.exit_code = 127});
    return;
  }
  entry.process = *std::move(process);
  entry.phase = Phase::kRunning;
  Say(absl::StrCat("started ", TaskName(entry.task), " (pid ", entry.process->pid(),
                   ", generation ", generation, ")"));
}

// Asks the process to leave: `signal` now, SIGKILL after the stop timeout.
void StopProcess(LauncherPointer self, TaskEntry& entry, int signal) {
  if (!entry.process || entry.phase == Phase::kStopping) return;
  entry.process->Signal(signal);
  entry.phase = Phase::kStopping;
  entry.kill_at = self->clock().now() + self->state.config.stop_timeout;
}

void StopAll(LauncherPointer self, int signal) {
  auto& st = self->state;
  if (st.spares) st.spares->Stop(signal, self->clock().now() + st.config.stop_timeout);
  for (TaskEntry& entry : self->state.tasks) {
    entry.restart_to.reset();
    StopProcess(self, entry, signal);
  }
}

// No restarts from now on; exits that wait for the policy's decision are final.
void StopRestarting(LauncherPointer self) {
  auto& st = self->state;
  st.stopping = true;
  StopSpares(self);  // no task will need them
  for (TaskEntry& entry : st.tasks) {
    entry.restart_to.reset();
    if (entry.phase == Phase::kReported) entry.phase = Phase::kFinished;
  }
}

void EndJob(LauncherPointer self, const std::string& why) {
  if (!self->state.job_error) self->state.job_error = why;
  StopRestarting(self);
}

void Report(LauncherPointer self, TaskEntry& entry, const ProcessExit& exit) {
  proto::TaskExitedRequest request;
  *request.mutable_task() = entry.task;
  request.set_generation(entry.generation);
  request.set_exit_code(exit.exit_code);
  request.set_signal(exit.signal);
  entry.phase = Phase::kReported;
  ++self->state.pending_reports;
  proto::CoordinatedTask task = entry.task;
  int64_t generation = entry.generation;
  std::string text = absl::StrCat(TaskName(task), " ", exit.ToString());
  auto settle = [self, task, generation, text](bool recorded) {
    --self->state.pending_reports;
    TaskEntry* e = Find(self, task);
    // Not a failure in the policy's eyes (or no answer): this exit is the task's end.
    if (e && !recorded && e->generation == generation &&
        (e->phase == Phase::kReported || e->phase == Phase::kFinished)) {
      e->phase = Phase::kFinished;
      e->failure = text;
    }
  };
  // Bounded: a leader that went away after the request left never answers it.
  self->request(self->state.config.leader, std::chrono::seconds(10), request)
      .then([settle](const proto::TaskExitedResponse& r) { settle(r.failure_recorded()); },
            [settle](const caf::error& error) {
              Say(absl::StrCat("reporting an exit failed: ", StatusText(ToStatus(error))));
              settle(false);
            });
}

void OnExit(LauncherPointer self, TaskEntry& entry, const ProcessExit& exit) {
  auto& st = self->state;
  // After the job failed, the other tasks leave because of it: their exits are its consequences.
  const bool consequence = st.job_error && st.failed_task && !SameTask(*st.failed_task, entry.task);
  Say(absl::StrCat(TaskName(entry.task), " (pid ", entry.process->pid(), ", generation ",
                   entry.generation, ") ", exit.ToString(),
                   consequence ? absl::StrCat(" after the job failed because ",
                                              TaskName(*st.failed_task), " failed")
                               : std::string()));
  entry.process.reset();
  entry.last_exit = exit;
  const bool was_stopping = entry.phase == Phase::kStopping;
  if (entry.restart_to && !st.stopping) {
    Start(self, entry, *entry.restart_to);
  } else if (was_stopping || exit.ok() || st.stopping) {
    entry.phase = Phase::kFinished;
  } else {
    Report(self, entry, exit);
  }
}

// Writes the task output gathered so far, before any line of the launcher's own.
void Flush(std::string& out, std::string& err) {
  if (!out.empty()) std::fwrite(out.data(), 1, out.size(), stdout);
  if (!err.empty()) std::fwrite(err.data(), 1, err.size(), stderr);
  std::fflush(stdout);
  std::fflush(stderr);
  out.clear();
  err.clear();
}

// Prints what every process wrote, reaps those that exited, enforces stop deadlines.
void Poll(LauncherPointer self) {
  auto& st = self->state;
  std::string out;
  std::string err;
  auto now = self->clock().now();
  for (TaskEntry& entry : st.tasks) {
    if (!entry.process) continue;
    auto print = [&](absl::string_view line, bool is_stderr) {
      absl::StrAppend(is_stderr ? &err : &out, "[", entry.label, "] ", line, "\n");
    };
    entry.process->DrainOutput(print);
    if (auto exit = entry.process->Poll()) {
      entry.process->DrainOutput(print);
      Flush(out, err);
      OnExit(self, entry, *exit);
    } else if (entry.phase == Phase::kStopping && now >= entry.kill_at) {
      entry.process->Signal(SIGKILL);
    }
  }
  if (st.spares) {
    auto say = [&](const std::string& line) {
      Flush(out, err);
      Say(line);
    };
    st.spares->Poll(
        now,
        [&](const std::string& label, absl::string_view line, bool is_stderr) {
          absl::StrAppend(is_stderr ? &err : &out, "[", label, "] ", line, "\n");
        },
        say);
    if (st.registered && !st.stopping) st.spares->Refill(say);
  }
  Flush(out, err);
  if (st.job_end_deadline && now >= *st.job_end_deadline) {
    st.job_end_deadline.reset();
    StopAll(self, SIGTERM);
  }
}

std::string FailureSummary(LauncherPointer self) {
  std::vector<std::string> failures;
  for (const TaskEntry& entry : self->state.tasks) {
    if (entry.failure) failures.push_back(*entry.failure);
  }
  return absl::StrJoin(failures, "; ");
}

// Every process of this launcher is gone and no exit waits for the policy's decision.
bool LocalDone(LauncherPointer self) {
  const auto& st = self->state;
  if (!st.registered || st.pending_reports > 0) return false;
  // Stopped spares are waited for (running ones are stopped once the job is done).
  if (st.spares && st.spares->stopped() && st.spares->running() > 0) return false;
  for (const TaskEntry& entry : st.tasks) {
    if (entry.process || entry.phase == Phase::kReported) return false;
  }
  return true;
}

void CheckFinished(LauncherPointer self) {
  auto& st = self->state;
  if (!LocalDone(self)) return;
  if (st.stop_signal != 0) {
    Finish(self, 128 + st.stop_signal,
           absl::StrCat("stopped by signal ", st.stop_signal, "; every task process is gone"));
  } else if (st.job_error) {
    Finish(self, 1, absl::StrCat("the job failed: ", *st.job_error));
  } else if (std::string failures = FailureSummary(self); !failures.empty()) {
    Finish(self, 1, absl::StrCat("the job failed: ", failures));
  } else if (st.spares_stopped_at_the_end) {
    Finish(self, 0, "every task finished");
  } else if (!st.asking_cluster) {
    // This host's tasks finished, but a failure elsewhere may still restart them (one-for-all):
    // a launcher stays until no task of the job is connected, and the one that hosts the leader
    // also until no other launcher is registered.
    st.asking_cluster = true;
    self->request(st.config.leader, std::chrono::seconds(5), proto::LauncherStatusRequest())
        .then(
            [self](const proto::LauncherStatusResponse& r) {
              auto& st = self->state;
              st.asking_cluster = false;
              // Checked again: a restart may have come in before this answer.
              if (LocalDone(self) && !st.stopping && !st.job_error && r.connected_tasks() == 0 &&
                  (!st.config.hosting || r.launchers() <= 1)) {
                if (st.spares && st.spares->running() > 0) {
                  StopSpares(self);  // then done, once they are gone (LocalDone waits for them)
                  st.spares_stopped_at_the_end = true;
                  return;
                }
                Finish(self, 0, "every task finished");
              }
            },
            [self](const caf::error&) { self->state.asking_cluster = false; });
  }
}

std::string Decision(const proto::SupervisionEvent& event) {
  switch (event.restart()) {
    case proto::RESTART_TASK:
      return "restarting it";
    case proto::RESTART_ALL:
      return absl::StrCat("restarting every task (round ", event.round(), ")");
    default:
      return event.job_failed() ? "the job failed" : "not restarted";
  }
}

void OnEvent(LauncherPointer self, const proto::SupervisionEvent& event) {
  auto& st = self->state;
  st.round = event.round();
  // Stopping: tasks leave because they were told to (or the job is over); none is restarted,
  // so what the policy made of their exits is not news.
  if (st.stopping) return;
  absl::Status status = StatusFromFields(event);
  std::string what = absl::StrCat(TaskName(event.failed_task()), " failed: ", StatusText(status));
  Say(absl::StrCat(what, "; ", Decision(event)));
  for (const proto::TaskRestart& restart : event.restarts()) {
    TaskEntry* entry = Find(self, restart.task());
    if (entry == nullptr) continue;
    entry->restart_to = restart.generation();
    entry->failure.reset();
    if (entry->process) {
      StopProcess(self, *entry, SIGTERM);
    } else {
      Start(self, *entry, restart.generation());
    }
  }
  if (event.job_failed()) {
    if (!st.job_error) st.failed_task = event.failed_task();
    EndJob(self, what);
    // The tasks were told; they get the stop timeout to leave by themselves.
    st.job_end_deadline = self->clock().now() + st.config.stop_timeout;
  } else if (event.restart() == proto::RESTART_NONE) {
    // Tolerated or told to its job only: a process that still runs may reset and rejoin; one
    // that exited has ended for good.
    TaskEntry* entry = Find(self, event.failed_task());
    if (entry && !entry->process) {
      entry->failure = what;
      entry->phase = Phase::kFinished;
    }
  }
}

void OnRegistered(LauncherPointer self, const proto::RegisterLauncherResponse& response) {
  auto& st = self->state;
  st.registered = true;
  st.round = response.round();
  st.world_size = response.cluster_size();
  for (int i = 0; i < static_cast<int>(st.tasks.size()); ++i) {
    TaskEntry& entry = st.tasks[i];
    entry.local_rank = i;
    for (int rank = 0; rank < response.cluster_size(); ++rank) {
      if (SameTask(response.cluster(rank), entry.task)) entry.rank = rank;
    }
  }
  for (int i = 0; i < static_cast<int>(st.tasks.size()); ++i) {
    Start(self, st.tasks[i], i < response.generations_size() ? response.generations(i) : 0);
  }
  if (st.spares) st.spares->Refill(Say);
}

LauncherControlActor::behavior_type LauncherBehavior(LauncherPointer self, LauncherConfig config,
                                                     LauncherListener listener) {
  auto& st = self->state;
  st.config = std::move(config);
  st.listener = std::move(listener);
  if (st.config.spares > 0) {
    const std::string& address = st.config.leader_address;
    const size_t colon = address.rfind(':');
    TaskProcess::Environment env = st.config.environment;
    env.insert(env.end(), {{kLeaderEnv, address},
                           {"MASTER_ADDR", address.substr(0, colon)},
                           {"MASTER_PORT", address.substr(colon + 1)}});
    st.spares = std::make_unique<SparePool>(st.config.spares,
                                            absl::StrCat("muster/spares/", st.config.host, "/"),
                                            st.config.command, std::move(env));
  }
  for (const auto& task : st.config.tasks) {
    TaskEntry entry;
    entry.task = task;
    entry.label = absl::StrCat(task.job_name(), "/", task.task_id());
    st.tasks.push_back(std::move(entry));
  }
  self->monitor(st.config.leader);
  self->set_down_handler([self](caf::down_msg& down) {
    if (down.source != self->state.config.leader.address()) return;
    Say("lost the leader; stopping every task");
    EndJob(self, "the leader went away");
    StopAll(self, SIGTERM);
  });
  proto::RegisterLauncherRequest request;
  request.set_host(st.config.host);
  for (const auto& task : st.config.tasks) *request.add_tasks() = task;
  self->request(st.config.leader, std::chrono::seconds(30), request,
                caf::actor_cast<LauncherActor>(self))
      .then([self](const proto::RegisterLauncherResponse& r) { OnRegistered(self, r); },
            [self](const caf::error& error) {
              Finish(
                  self, 1,
                  absl::StrCat("the leader refused this launcher: ", StatusText(ToStatus(error))));
            });
  self->send(self, tick_atom::value);
  return {
      [self](const proto::SupervisionEvent& event) { OnEvent(self, event); },
      [self](shutdown_atom, int signal) {
        auto& st = self->state;
        if (st.stop_signal == 0) {
          st.stop_signal = signal;
          Say(absl::StrCat("signal ", signal, ": stopping every task"));
        }
        StopRestarting(self);
        StopAll(self, signal);
        if (!st.registered) Finish(self, 128 + signal, "stopped before the leader answered");
      },
      [self](tick_atom) {
        Poll(self);
        CheckFinished(self);
        if (!self->state.done) self->delayed_send(self, kTick, tick_atom::value);
      },
  };
}

}  // namespace

LauncherControlActor SpawnLauncher(caf::actor_system& system, LauncherConfig config,
                                   LauncherListener listener) {
  return system.spawn(LauncherBehavior, std::move(config), std::move(listener));
}

}  // namespace muster::cli
