// The launcher's spares (--spares N, net/launcher/spare_pool.h): made, taken for a restarted
// task, polled and stopped.
#include <signal.h>

#include <absl/strings/str_cat.h>

#include "muster/messages/requests/kv_requests.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/launcher/launcher_state.h"
#include "muster/net/process/launch_environment.h"

namespace muster::cli::launcher_internal {
namespace {

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

}  // namespace

std::unique_ptr<SparePool> MakeSpares(const LauncherConfig& config) {
  if (config.spares <= 0) return nullptr;
  TaskProcess::Environment env = config.environment;
  TaskProcess::Environment leader = LeaderVariables(config);
  env.insert(env.end(), leader.begin(), leader.end());
  return std::make_unique<SparePool>(config.spares,
                                     absl::StrCat("muster/spares/", config.host, "/"),
                                     config.command, std::move(env));
}

void StopSpares(LauncherPointer self) {
  auto& st = self->state;
  if (st.spares) st.spares->Stop(SIGTERM, self->clock().now() + st.config.stop_timeout);
}

bool StartFromSpare(LauncherPointer self, TaskEntry& entry) {
  auto& spares = self->state.spares;
  if (!spares) return false;
  std::optional<SparePool::Spare> spare = spares->Take(Say);
  if (!spare) return false;
  TakeSpare(self, entry, *std::move(spare));
  spares->Refill(Say);
  return true;
}

void PollSpares(LauncherPointer self, caf::actor_clock::time_point now, std::string& out,
                std::string& err) {
  auto& st = self->state;
  if (!st.spares) return;
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

}  // namespace muster::cli::launcher_internal
