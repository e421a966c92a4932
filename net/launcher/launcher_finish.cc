// When the launcher is done: every process of its tasks (and spares it stopped) gone, no exit
// waiting for the policy's decision, and then the exit code and message.
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>

#include "muster/net/launcher/launcher_state.h"

namespace muster::cli::launcher_internal {
namespace {

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

}  // namespace

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
  } else if (!st.asking_cluster && !st.following) {
    // This host's tasks finished, but a failure elsewhere may still restart them (one-for-all):
    // a launcher stays until no task of the job is connected, and the one that hosts the leader
    // also until no other launcher is registered. (While FOLLOWING, the next leader is asked.)
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

}  // namespace muster::cli::launcher_internal
