// A launcher of an HA job's tasks follows the job's leaders (FOLLOWING in launcher_actor.h): when
// its leader is lost, the processes run on, and a leader session finds the next active leader.
// The launcher registers with it again (RegisterLauncherRequest.rejoin) with the generation of
// each process it runs; the leader answers with the generations it recorded, and the launcher
// starts again what was restarted without it, then reports the exits that happened meanwhile.
#include <algorithm>
#include <chrono>
#include <csignal>

#include <absl/strings/str_cat.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/launcher/launcher_state.h"

namespace muster::cli::launcher_internal {
namespace {

// How soon an exit whose report bounced is reported again.
constexpr auto kReportAgainAfter = std::chrono::milliseconds(200);

void GiveUp(LauncherPointer self, const std::string& why) {
  Say(absl::StrCat(why, "; stopping every task"));
  self->state.following = false;
  EndJob(self, "the leader went away and no other leader of the job took this launcher back");
  StopAll(self, SIGTERM);
}

// Looks again (the leader found went away before it took the launcher back), unless the time
// to find one is up.
void SearchAgain(LauncherPointer self, const std::string& why) {
  if (self->clock().now() >= self->state.follow_deadline) {
    GiveUp(self, absl::StrCat("no leader of the job took this launcher back in time (", why, ")"));
    return;
  }
  FollowLeader(self);
}

// Brings the tasks to the generations the leader recorded; the kept exits are reported by the
// tick.
void OnRejoined(LauncherPointer self, const proto::RegisterLauncherResponse& response) {
  auto& st = self->state;
  st.following = false;
  st.round = response.round();
  int restarted = 0;
  for (int i = 0; i < static_cast<int>(st.tasks.size()) && i < response.generations_size(); ++i) {
    TaskEntry& entry = st.tasks[i];
    const int64_t recorded = response.generations(i);
    if (st.stopping || recorded <= entry.restart_to.value_or(entry.generation)) continue;
    // Restarted by a leader whose decision did not reach this launcher.
    ++restarted;
    entry.unreported.reset();
    entry.failure.reset();
    entry.restart_to = recorded;
    if (entry.process) {
      StopProcess(self, entry, SIGTERM);
    } else {
      Start(self, entry, recorded);
    }
  }
  Say(absl::StrCat("rejoined the job at its active leader (round ", st.round, ")",
                   restarted > 0 ? absl::StrCat("; restarting ", restarted,
                                                " task(s) the leader restarted meanwhile")
                                 : std::string()));
}

void Rejoin(LauncherPointer self, uint64_t attempt) {
  auto& st = self->state;
  proto::RegisterLauncherRequest request;
  request.set_host(st.config.host);
  request.set_rejoin(true);
  for (const TaskEntry& entry : st.tasks) {
    *request.add_tasks() = entry.task;
    // A restart under way runs that generation next.
    request.add_generations(entry.restart_to.value_or(entry.generation));
  }
  self->request(st.config.leader, std::chrono::seconds(10), request,
                caf::actor_cast<LauncherActor>(self))
      .then(
          [self, attempt](const proto::RegisterLauncherResponse& r) {
            if (attempt == self->state.follow_attempt && self->state.following) OnRejoined(self, r);
          },
          [self, attempt](const caf::error& error) {
            auto& st = self->state;
            if (attempt != st.follow_attempt || !st.following || st.stopping) return;
            const absl::Status status = ToStatus(error);
            // Gone, silent, or a standby by now: another leader may take it back.
            if (error.category() != kStatusCategory ||
                status.code() == absl::StatusCode::kUnavailable) {
              SearchAgain(self, StatusText(status));
              return;
            }
            GiveUp(self, absl::StrCat("the job's leader refused this launcher back: ",
                                      StatusText(status)));
          });
}

}  // namespace

void KeepExit(LauncherPointer self, TaskEntry& entry, const ProcessExit& exit) {
  entry.phase = Phase::kReported;
  entry.unreported = exit;
  entry.report_at = self->clock().now() + kReportAgainAfter;
}

void ReportKeptExits(LauncherPointer self, caf::actor_clock::time_point now) {
  auto& st = self->state;
  if (st.following || st.stopping) return;
  for (TaskEntry& entry : st.tasks) {
    if (!entry.unreported || now < entry.report_at) continue;
    ProcessExit exit = *entry.unreported;
    entry.unreported.reset();
    Report(self, entry, exit);
  }
}

void FollowLeader(LauncherPointer self) {
  auto& st = self->state;
  const uint64_t attempt = ++st.follow_attempt;
  if (!st.following) {
    st.following = true;
    st.follow_deadline = self->clock().now() + st.config.follow->connect.timeout;
    Say("lost the leader; looking for the job's active leader (the tasks keep running)");
  }
  LeaderSessionOptions options = *st.config.follow;
  options.connect.timeout = std::max<caf::timespan>(
      std::chrono::duration_cast<caf::timespan>(st.follow_deadline - self->clock().now()),
      std::chrono::milliseconds(100));
  OpenLeaderSession(self, std::move(options), [self, attempt](LeaderSessionReply reply) {
    auto& st = self->state;
    if (attempt != st.follow_attempt || !st.following) return;  // an earlier search's
    if (st.stopping) {
      st.following = false;  // stopped meanwhile: nothing to rejoin
      return;
    }
    if (!reply.status.ok()) {
      GiveUp(self, absl::StrCat("no leader of the job took this launcher back: ",
                                StatusText(reply.status)));
      return;
    }
    st.config.leader = std::move(reply.leader);
    self->monitor(st.config.leader);
    Rejoin(self, attempt);
  });
}

}  // namespace muster::cli::launcher_internal
