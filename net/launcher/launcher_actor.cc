#include "muster/net/launcher/launcher_actor.h"

#include <signal.h>

#include <cstdio>
#include <memory>
#include <optional>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/launcher/launcher_state.h"
#include "muster/net/process/launch_environment.h"

namespace muster::cli {
namespace launcher_internal {

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

// The address may list an HA job's leaders ("h1:p,h2:p"): MUSTER_LEADER gets them all (or the
// etcd:// URL they were read from, leader_registry), PyTorch's MASTER_ADDR and MASTER_PORT the
// first.
TaskProcess::Environment LeaderVariables(const LauncherConfig& config) {
  const std::string& address = config.leader_address;
  const std::string first = address.substr(0, address.find(','));
  const size_t colon = first.rfind(':');
  return {{kLeaderEnv, config.leader_registry.empty() ? address : config.leader_registry},
          {"MASTER_ADDR", first.substr(0, colon)},
          {"MASTER_PORT", first.substr(colon + 1)}};
}

TaskProcess::Environment EnvironmentOf(LauncherPointer self, const TaskEntry& entry) {
  const auto& st = self->state;
  TaskProcess::Environment env = st.config.environment;
  TaskProcess::Environment leader = LeaderVariables(st.config);
  env.insert(env.end(), leader.begin(), leader.end());
  env.insert(env.end(), {{kJobEnv, entry.task.job_name()},
                         {kTaskEnv, absl::StrCat(entry.task.task_id())},
                         {kGenerationEnv, absl::StrCat(entry.generation)},
                         {kRoundEnv, absl::StrCat(st.round)},
                         {"RANK", absl::StrCat(entry.rank)},
                         {"WORLD_SIZE", absl::StrCat(st.world_size)},
                         {"LOCAL_RANK", absl::StrCat(entry.local_rank)},
                         {"LOCAL_WORLD_SIZE", absl::StrCat(st.tasks.size())}});
  if (auto own = st.config.task_environment.find(TaskName(entry.task));
      own != st.config.task_environment.end()) {
    env.insert(env.end(), own->second.begin(), own->second.end());
  }
  return env;
}

void Finish(LauncherPointer self, int code, const std::string& message) {
  if (self->state.done) return;
  self->state.done = true;
  self->send(self->state.listener, launcher_done_atom::value, code, message);
  self->quit();
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
  if (generation > 0 && StartFromSpare(self, entry)) return;
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
    entry.unreported.reset();
    if (entry.phase == Phase::kReported) entry.phase = Phase::kFinished;
  }
}

void EndJob(LauncherPointer self, const std::string& why) {
  if (!self->state.job_error) self->state.job_error = why;
  StopRestarting(self);
}

void Report(LauncherPointer self, TaskEntry& entry, const ProcessExit& exit) {
  if (self->state.following) {
    KeepExit(self, entry, exit);  // for the next leader, once it took this launcher back
    return;
  }
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
            [self, settle, task, generation, exit](const caf::error& error) {
              // An HA job's launcher: a leader going away (bounced, no answer, a standby's
              // Unavailable) does not decide; the exit is reported again, to whichever leader
              // is there then. Service errors are answers.
              if (self->state.config.follow && !self->state.stopping &&
                  (error.category() != kStatusCategory ||
                   ToStatus(error).code() == absl::StatusCode::kUnavailable)) {
                --self->state.pending_reports;
                TaskEntry* e = Find(self, task);
                if (e && e->generation == generation && e->phase == Phase::kReported) {
                  KeepExit(self, *e, exit);
                }
                return;
              }
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
  PollSpares(self, now, out, err);
  Flush(out, err);
  ReportKeptExits(self, now);
  if (st.job_end_deadline && now >= *st.job_end_deadline) {
    st.job_end_deadline.reset();
    StopAll(self, SIGTERM);
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
  // Only the current leader decides: a leader that was lost (or that this launcher left) may
  // still say what it decided before it stepped down; the next one restarts what it recorded.
  const caf::strong_actor_ptr& sender = self->current_sender();
  if (st.following || (sender && sender->node() != st.config.leader.node())) return;
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

constexpr auto kTick = std::chrono::milliseconds(20);

LauncherControlActor::behavior_type LauncherBehavior(LauncherPointer self, LauncherConfig config,
                                                     LauncherListener listener) {
  auto& st = self->state;
  st.config = std::move(config);
  st.listener = std::move(listener);
  st.spares = MakeSpares(st.config);
  for (const auto& task : st.config.tasks) {
    TaskEntry entry;
    entry.task = task;
    entry.label = absl::StrCat(task.job_name(), "/", task.task_id());
    st.tasks.push_back(std::move(entry));
  }
  self->monitor(st.config.leader);
  self->set_down_handler([self](caf::down_msg& down) {
    if (down.source != self->state.config.leader.address()) return;
    // (Also the leader found while FOLLOWING, lost before it took the launcher back.)
    if (self->state.config.follow && self->state.registered && !self->state.stopping) {
      FollowLeader(self);
      return;
    }
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

}  // namespace launcher_internal

LauncherControlActor SpawnLauncher(caf::actor_system& system, LauncherConfig config,
                                   LauncherListener listener) {
  return system.spawn(launcher_internal::LauncherBehavior, std::move(config), std::move(listener));
}

}  // namespace muster::cli
