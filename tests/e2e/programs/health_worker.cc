// A worker for the job-health multi-process tests: a training loop of numbered steps that
// reports its progress, with the scenario's twist. It prints one line per event
// ("EVENT <what> ..."), with wall-clock microseconds where the test measures latencies.
//   steps      report steps until the error callback fires; with --start_barrier, start
//              stepping together with the other tasks; with --pause_at_step, sleep --pause_ms
//              there once (a checkpoint the whole job takes), then step on; with
//              --block_at_step, stop stepping there (heartbeats go on: the process is alive
//              but stuck)
//   preempt    call ReachedSyncPoint every step; --notify_at_step: this task notifies the
//              preemption at that step; prints the step at which it stopped
//   ephemeral  insert the ephemeral key eph/<task> and wait to be killed; with --expect_gone,
//              first check that an earlier incarnation's key is already gone
// Exit code 0 when the scenario ran as written, 1 otherwise.
#include <cstdio>
#include <memory>
#include <string>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/status/status.h>
#include <absl/strings/str_cat.h>
#include <absl/synchronization/notification.h>
#include <absl/time/clock.h>
#include <caf/actor_system.hpp>

#include "muster/messages/task_name.h"
#include "muster/net/agent/agent.h"
#include "tests/e2e/programs/worker_events.h"

ABSL_FLAG(std::string, leader, "127.0.0.1:7400", "leader HOST:PORT");
ABSL_FLAG(int, task, 0, "task id of job worker");
ABSL_FLAG(std::string, scenario, "steps", "steps, preempt or ephemeral");
ABSL_FLAG(int64_t, heartbeat_timeout_ms, 10'000, "heartbeat timeout");
ABSL_FLAG(bool, recoverable, false, "recoverable task");
ABSL_FLAG(int64_t, step_ms, 10, "how long a step takes");
ABSL_FLAG(int64_t, block_at_step, -1, "steps: stop stepping at this step (-1: never)");
ABSL_FLAG(int64_t, pause_at_step, -1, "steps: pause once at this step (-1: never)");
ABSL_FLAG(int64_t, pause_ms, 0, "steps: how long the pause at --pause_at_step lasts");
ABSL_FLAG(bool, start_barrier, false, "steps: wait for every task before the first step");
ABSL_FLAG(int64_t, connect_delay_ms, 0,
          "wait this long before connecting (where this task's heartbeats fall in the interval)");
ABSL_FLAG(int64_t, notify_at_step, -1, "preempt: notify the preemption at this step");
ABSL_FLAG(int64_t, max_steps, 3000, "give up after this many steps");
ABSL_FLAG(bool, expect_gone, false, "ephemeral: the key of an earlier incarnation must be gone");

namespace {

using ::muster::testing::Describe;
using ::muster::testing::Event;
using ::muster::testing::NowMicros;

void Step() { absl::SleepFor(absl::Milliseconds(absl::GetFlag(FLAGS_step_ms))); }

int Steps(muster::Agent& agent, absl::Notification& error_seen) {
  const int64_t block_at = absl::GetFlag(FLAGS_block_at_step);
  const int64_t pause_at = absl::GetFlag(FLAGS_pause_at_step);
  if (absl::GetFlag(FLAGS_start_barrier)) {
    absl::Status started = agent.WaitAtBarrier("steps", absl::Seconds(30));
    Event("start barrier " + Describe(started));
    if (!started.ok()) return 1;
  }
  for (int64_t step = 0; step < absl::GetFlag(FLAGS_max_steps); ++step) {
    agent.ReportProgress(step);
    if (step == pause_at) {
      Event(absl::StrCat("paused step=", step, " at_us=", NowMicros()));
      absl::SleepFor(absl::Milliseconds(absl::GetFlag(FLAGS_pause_ms)));
      Event(absl::StrCat("resumed step=", step, " at_us=", NowMicros()));
    }
    if (step == block_at) {
      Event(absl::StrCat("blocked step=", step, " at_us=", NowMicros()));
      // Stuck in "a collective": the loop waits here, the heartbeats go on.
      return error_seen.WaitForNotificationWithTimeout(absl::Seconds(60)) ? 0 : 1;
    }
    if (error_seen.HasBeenNotified()) return 0;
    Step();
  }
  Event("finished without an error");
  return 1;
}

int Preempt(muster::Agent& agent) {
  const int64_t notify_at = absl::GetFlag(FLAGS_notify_at_step);
  for (int64_t step = 0; step < absl::GetFlag(FLAGS_max_steps); ++step) {
    if (step == notify_at) {
      auto first = agent.NotifyPreemption(absl::Now() + absl::Seconds(30), "maintenance");
      if (!first.ok()) return Event("notify " + Describe(first.status())), 1;
      Event(absl::StrCat("notified step=", step, " first=", *first));
    }
    auto reached = agent.ReachedSyncPoint(step);
    if (!reached.ok()) return Event("sync " + Describe(reached.status())), 1;
    if (*reached) {
      Event(absl::StrCat("stopped step=", step));
      absl::Status shutdown = agent.Shutdown();
      Event("shutdown " + Describe(shutdown));
      return shutdown.ok() ? 0 : 1;
    }
    Step();
  }
  Event("never reached a sync point");
  return 1;
}

int Ephemeral(muster::Agent& agent) {
  const std::string key = absl::StrCat("eph/", absl::GetFlag(FLAGS_task));
  if (absl::GetFlag(FLAGS_expect_gone)) {
    auto old = agent.TryGetKeyValue(key);
    Event(old.ok() ? "old key present value=" + *old : "old key " + Describe(old.status()));
  }
  absl::Status inserted = agent.InsertKeyValue(key, absl::StrCat(agent.incarnation()),
                                               muster::KvWriteOptions{.ephemeral = true});
  Event(absl::StrCat("inserted ", Describe(inserted), " incarnation=", agent.incarnation()));
  if (!inserted.ok()) return 1;
  absl::SleepFor(absl::Seconds(60));  // until the test kills this process
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::Duration heartbeat = absl::Milliseconds(absl::GetFlag(FLAGS_heartbeat_timeout_ms));
  muster::NodeConfig cfg(muster::WorkerNodeOptions(heartbeat));
  caf::actor_system system{cfg};
  absl::Notification error_seen;
  muster::AgentOptions options{.leader = absl::GetFlag(FLAGS_leader),
                               .job_name = "worker",
                               .task_id = absl::GetFlag(FLAGS_task),
                               .recoverable = absl::GetFlag(FLAGS_recoverable),
                               .heartbeat_timeout = heartbeat,
                               .register_timeout = absl::Seconds(20)};
  options.on_preemption = [](const muster::proto::PreemptionNotice& notice) {
    Event(absl::StrCat("notice reason=", notice.reason(),
                       " by=", muster::TaskName(notice.notified_by())));
  };
  auto agent = muster::Agent::Create(system, options, [&](const absl::Status& error) {
    Event(absl::StrCat("error at_us=", NowMicros(), " ", Describe(error)));
    if (!error_seen.HasBeenNotified()) error_seen.Notify();
  });
  if (!agent.ok()) return Event("create " + Describe(agent.status())), 1;
  absl::SleepFor(absl::Milliseconds(absl::GetFlag(FLAGS_connect_delay_ms)));
  absl::Status connected = (*agent)->Connect();
  Event("connect " + Describe(connected));
  if (!connected.ok()) return 1;
  const std::string scenario = absl::GetFlag(FLAGS_scenario);
  int code = scenario == "steps"       ? Steps(**agent, error_seen)
             : scenario == "preempt"   ? Preempt(**agent)
             : scenario == "ephemeral" ? Ephemeral(**agent)
                                       : 2;
  return code;
}
