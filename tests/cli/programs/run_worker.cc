// A task program for the `muster run` tests. It takes its identity from the launcher's
// environment, prints "READY task=T generation=G round=R pid=P incarnation=I leader=L", waits for
// the key "go" (a process of a later generation writes it, so the job completes once something was
// restarted), meets every task at the barrier "done", shuts down and exits 0. An error pushed by
// the leader prints "ERROR CALLBACK" and ends the process with exit status 2 at once.
// --crash_task=N --crash_below_generation=G: task N exits 3 after connecting while its
// generation is below G (a crash loop).
// --membership: a task of an elastic job. At its safe point every 20 ms it prints each new
// membership ("MEMBERSHIP task=T generation=G version=V members=0,1"); once it is a member of
// version --membership_done or later it shuts down and exits 0.
// --leader_reconnect_timeout=D: the agent follows a lost leader for D (an HA job's tasks).
// --linger_task=N: task N of generation 0 ignores SIGTERM and outlives the error the leader
// pushes: it then writes the key "stale" and prints "STALE WRITE <status>" (an old process that
// goes on after a restart), and waits for its SIGKILL.
#include <signal.h>
#include <unistd.h>

#include <atomic>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <absl/algorithm/container.h>
#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/time/time.h>
#include <caf/actor_system.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/net/agent/agent.h"
#include "muster/net/process/launch_environment.h"
#include "muster/net/transport/node_config.h"

ABSL_FLAG(int, crash_task, -1, "This task id exits 3 after connecting ...");
ABSL_FLAG(int64_t, crash_below_generation, 0, "... while its generation is below this");
ABSL_FLAG(bool, spare_exits, false, "As a spare (muster run --spares), exit 4 at once");
ABSL_FLAG(int, linger_task, -1, "This task id, generation 0, goes on after its error");
ABSL_FLAG(bool, membership, false, "A task of an elastic job: follow its membership");
ABSL_FLAG(int64_t, membership_done, 3, "With --membership: the version at which members finish");
ABSL_FLAG(absl::Duration, heartbeat_timeout, absl::Seconds(2), "The leader's heartbeat timeout");
ABSL_FLAG(absl::Duration, leader_reconnect_timeout, absl::ZeroDuration(),
          "How long the agent follows a lost leader (an HA job's failover)");

namespace {

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

int Fail(const std::string& step, const absl::Status& status) {
  Say(absl::StrCat("FAILED ", step, ": ", muster::StatusText(status)));
  return 1;
}

// --membership (see the file's comment).
int FollowMembership(muster::Agent& agent, const muster::LaunchIdentity& me) {
  int64_t version = 0;
  for (absl::Time deadline = absl::Now() + absl::Seconds(60); absl::Now() < deadline;) {
    auto m = agent.WaitForMembership(version, absl::Seconds(30));
    if (!m.ok()) return Fail("membership", m.status());
    if (m->version() != version) {
      version = m->version();
      Say(absl::StrCat("MEMBERSHIP task=", me.task_id, " generation=", me.generation,
                       " version=", version, " members=", absl::StrJoin(m->members(), ",")));
    }
    if (version >= absl::GetFlag(FLAGS_membership_done) &&
        absl::c_linear_search(m->members(), me.task_id)) {
      if (absl::Status s = agent.Shutdown(); !s.ok()) return Fail("shutdown", s);
      Say(absl::StrCat("DONE task=", me.task_id, " generation=", me.generation));
      return 0;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  Say("FAILED membership: no membership of the last version within 60 s");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  muster::NodeConfig config;
  caf::actor_system system{config};
  // A spare (muster run --spares) waits here for the task its launcher gives it.
  if (std::getenv(muster::kSpareEnv) != nullptr) {
    Say(absl::StrCat("SPARE pid=", getpid()));
    if (absl::GetFlag(FLAGS_spare_exits)) return 4;
    auto taken = muster::Agent::TakeSpareAssignment(system);
    if (!taken.ok()) return Fail("spare", taken.status());
  }
  auto identity = muster::LaunchIdentityFromEnvironment();
  if (!identity.ok() || !identity->has_value()) {
    Say("FAILED no launcher identity in the environment");
    return 1;
  }
  const muster::LaunchIdentity& me = **identity;
  static std::atomic<bool> errored{false};
  const bool linger = me.task_id == absl::GetFlag(FLAGS_linger_task) && me.generation == 0;
  if (linger) signal(SIGTERM, SIG_IGN);
  auto agent = muster::Agent::Create(
      system,
      {.leader = me.leader,
       .job_name = me.job,
       .task_id = me.task_id,
       .heartbeat_timeout = absl::GetFlag(FLAGS_heartbeat_timeout),
       .register_timeout = absl::Seconds(20),
       .leader_reconnect_timeout = absl::GetFlag(FLAGS_leader_reconnect_timeout)},
      [linger](const absl::Status& error) {
        Say(absl::StrCat("ERROR CALLBACK ", muster::StatusText(error)));
        if (!linger) std::_Exit(2);
        errored.store(true);
      });
  if (!agent.ok()) return Fail("create", agent.status());
  if (absl::Status s = (*agent)->Connect(); !s.ok()) return Fail("connect", s);
  Say(absl::StrCat("READY task=", me.task_id, " generation=", me.generation, " round=", me.round,
                   " pid=", getpid(), " incarnation=", (*agent)->incarnation(),
                   " leader=", me.leader));
  if (me.task_id == absl::GetFlag(FLAGS_crash_task) &&
      me.generation < absl::GetFlag(FLAGS_crash_below_generation)) {
    Say("CRASHING");
    std::_Exit(3);
  }
  if (absl::GetFlag(FLAGS_membership)) {
    int code = FollowMembership(**agent, me);
    agent->reset();
    return code;
  }
  if (linger) {
    for (int i = 0; i < 3000 && !errored.load(); ++i) absl::SleepFor(absl::Milliseconds(10));
    absl::Status stale = (*agent)->InsertKeyValue("stale", "old", /*allow_overwrite=*/true);
    Say(absl::StrCat("STALE WRITE ", muster::StatusText(stale)));
    for (;;) absl::SleepFor(absl::Seconds(1));  // until the launcher's SIGKILL
  }
  if (me.generation > 0) {
    if (absl::Status s = (*agent)->InsertKeyValue("go", "1", /*allow_overwrite=*/true); !s.ok()) {
      return Fail("insert go", s);
    }
  }
  if (auto go = (*agent)->GetKeyValue("go", absl::Seconds(60)); !go.ok()) {
    return Fail("get go", go.status());
  }
  if (absl::Status s = (*agent)->WaitAtBarrier("done", absl::Seconds(60), {}); !s.ok()) {
    return Fail("barrier", s);
  }
  if (absl::Status s = (*agent)->Shutdown(); !s.ok()) return Fail("shutdown", s);
  Say(absl::StrCat("DONE task=", me.task_id, " generation=", me.generation));
  agent->reset();
  return 0;
}
