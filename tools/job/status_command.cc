#include "muster/tools/job/status_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>
#include <caf/send.hpp>

#include "muster/messages/requests/task_requests.h"
#include "muster/net/leader/standby_leader.h"
#include "muster/net/process/shutdown_signals.h"
#include "muster/tools/common/cli_common.h"
#include "muster/tools/common/job_watch_actor.h"
#include "muster/tools/job/status_report.h"

ABSL_FLAG(bool, watch, false, "Print the status again whenever a task changes state, until Ctrl-C");
ABSL_FLAG(bool, json, false,
          "Print JSON: status prints one muster.cli.StatusReport object per line instead of "
          "tables, events the JSON line of each event (docs/operations.md)");
ABSL_FLAG(bool, bring_up, false,
          "status: print the registration timeline instead of the tables: when the first task "
          "registered, the median registration, and the last 10 tasks to register with how "
          "late each was against the median");

namespace muster::cli {
namespace {

constexpr char kCommand[] = "status";
constexpr absl::Duration kDefaultTimeout = absl::Seconds(5);

void Print(const StatusReport& report, bool refresh) {
  if (absl::GetFlag(FLAGS_json)) {
    std::printf("%s\n", RenderStatusJson(report).c_str());
  } else {
    // A terminal shows the latest status only; a pipe or file gets every one, separated.
    if (refresh && isatty(STDOUT_FILENO)) std::fputs("\033[H\033[2J", stdout);
    if (refresh) {
      std::printf(
          "--- %s\n",
          absl::FormatTime("%Y-%m-%dT%H:%M:%E3S%Ez", absl::Now(), absl::LocalTimeZone()).c_str());
    }
    std::fputs(absl::GetFlag(FLAGS_bring_up) ? RenderBringUp(report).c_str()
                                             : RenderStatusTable(report).c_str(),
               stdout);
  }
  std::fflush(stdout);
}

// What the leader at `address` is now, asked on its own (a session of its own, within
// `timeout` to connect and as much to answer): the active leader answers, a standby says it
// stands by and names the active one, and anything else is unreachable.
LeaderRole ProbeLeader(const LeaderAddress& address, absl::Duration timeout) {
  absl::Status status;
  auto session = LeaderSession::Connect(address, timeout, /*wait_for_leader=*/false);
  if (session.ok()) {
    status = (*session)
                 ->Ask<proto::WatchJobStateResponse>(
                     timeout, requests::WatchJobState(/*job=*/"", /*version=*/std::nullopt))
                 .status();
  } else {
    status = session.status();
  }
  LeaderRole role;
  role.set_address(address.ToString());
  if (status.ok()) {
    role.set_role("active");
  } else if (std::optional<std::string> active = StandbyActiveLeader(status)) {
    role.set_role("standby");
    role.set_detail(*active);
  } else {
    role.set_role("unreachable");
    role.set_detail(std::string(status.message()));
  }
  return role;
}

// Given an HA job's leaders (several addresses), what each one is now (ProbeLeader, all at once,
// at most 2 s each to connect and to answer). The report's leader becomes the active one found.
void ProbeLeaders(const LeaderAddress& leaders, absl::Duration timeout, StatusReport* report) {
  if (leaders.others.empty()) return;
  std::vector<LeaderAddress> each = {LeaderAddress{.host = leaders.host, .port = leaders.port}};
  for (const std::string& other : leaders.others) {
    if (auto address = ParseLeaderAddress(other); address.ok()) each.push_back(*address);
  }
  timeout = std::min(timeout, absl::Seconds(2));
  std::vector<LeaderRole> roles(each.size());
  std::vector<std::thread> probes;
  for (size_t i = 0; i < each.size(); ++i) {
    probes.emplace_back([&, i] { roles[i] = ProbeLeader(each[i], timeout); });
  }
  for (std::thread& probe : probes) probe.join();
  for (LeaderRole& role : roles) {
    if (role.role() == "active") report->set_leader(role.address());
    *report->add_leaders() = std::move(role);
  }
}

// Collects and prints the status for `job_state`; returns the exit code.
int Show(LeaderSession& session, absl::Duration timeout,
         const proto::WatchJobStateResponse& job_state, bool refresh) {
  auto report = CollectStatus(session, timeout, job_state);
  if (!report.ok()) return ReportFailure(kCommand, report.status());
  ProbeLeaders(session.address(), timeout, &*report);
  Print(*report, refresh);
  return kExitOk;
}

int ShowOnce(LeaderSession& session, absl::Duration timeout) {
  auto job_state = session.Ask<proto::WatchJobStateResponse>(
      timeout, requests::WatchJobState(/*job=*/"", /*version=*/std::nullopt));
  if (!job_state.ok()) return ReportFailure(kCommand, job_state.status());
  return Show(session, timeout, *job_state, false);
}

// Prints the status on every job change until a shutdown signal (kExitOk) or a failure.
int ShowOnChange(LeaderSession& session, absl::Duration timeout) {
  caf::scoped_actor& self = session.self();
  ShutdownSignalForwarder forwarder{caf::actor_cast<caf::actor>(self)};
  auto watch = SpawnJobWatch(session.system(), session.leader(), "",
                             caf::actor_cast<JobWatchListener>(self));
  bool running = true;
  int code = kExitOk;
  self->receive_while(running)(
      [&](const proto::WatchJobStateResponse& job_state) {
        code = Show(session, timeout, job_state, true);
        running = code == kExitOk;
      },
      [&](shutdown_atom, int) { running = false; },
      [&](watch_failed_atom, const caf::error& error) {
        code = ReportFailure(kCommand, ToStatus(error));
        running = false;
      });
  caf::anon_send_exit(watch, caf::exit_reason::user_shutdown);
  return code;
}

}  // namespace

const CommandSpec& StatusSpec() {
  static const CommandSpec spec{
      .name = "status",
      .synopsis =
          "--leader HOST:PORT[,HOST:PORT...] [--watch] [--json] [--bring-up] [--timeout 5s]",
      .summary =
          "Shows what the leader knows: every task with its state, incarnation, last\n"
          "heartbeat and error; the open barriers with the tasks they still wait for; and\n"
          "the number of keys per key-value directory. --bring-up shows the registration\n"
          "timeline instead: the first and median registration and the last 10 tasks to\n"
          "register. Given an HA job's leaders (--leader H:P,H:P), it shows the active\n"
          "leader's status and what each leader is now (active, standby, unreachable).\n"
          "Exits 1 when the leader cannot be reached within --timeout.",
      .flags = {"leader", "watch", "json", "bring_up", "timeout", "wait_for_leader", "token_file",
                "tls_cert", "tls_key", "tls_ca"},
  };
  return spec;
}

int RunStatus(const std::vector<std::string>& argv) {
  ParsedCommand parsed;
  if (auto done = ParseOrExit(StatusSpec(), argv, &parsed)) return *done;
  auto leader = LeaderFlag();
  if (!leader.ok()) return ReportLeaderFlagError(kCommand, leader.status());
  auto timeout = TimeoutFlag(kDefaultTimeout);
  if (!timeout.ok()) return ReportUsageError(kCommand, timeout.status());
  const bool watch = absl::GetFlag(FLAGS_watch);
  // Before the actor system starts its threads: they inherit the blocked signals.
  if (watch) BlockShutdownSignals();
  auto session = LeaderSession::Connect(*leader, *timeout);
  if (!session.ok()) return ReportFailure(kCommand, session.status());
  return watch ? ShowOnChange(**session, *timeout) : ShowOnce(**session, *timeout);
}

}  // namespace muster::cli
