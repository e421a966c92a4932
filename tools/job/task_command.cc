#include "muster/tools/job/task_command.h"

#include <cstdio>

#include <absl/strings/str_cat.h>

#include "muster/messages/requests/task_requests.h"
#include "muster/messages/task_name.h"
#include "muster/tools/common/cli_common.h"

namespace muster::cli {
namespace {

constexpr absl::Duration kDefaultTimeout = absl::Seconds(10);

const CommandSpec& ResetSpec() {
  static const CommandSpec spec{
      .name = "task reset",
      .synopsis = "--leader HOST:PORT [--timeout 10s] /job:NAME/task:ID",
      .summary =
          "Resets a task in ERROR: the leader moves it to DISCONNECTED, so that a process may\n"
          "register it again (its registration is refused with ABORTED while it is in ERROR).\n"
          "Works from any host; a CONNECTED task is reset only by its own process\n"
          "(PERMISSION_DENIED), and a DISCONNECTED one gives FAILED_PRECONDITION.",
      .flags = {"leader", "timeout", "wait_for_leader", "token_file", "tls_cert", "tls_key",
                "tls_ca"},
      .min_args = 1,
      .max_args = 1,
  };
  return spec;
}

constexpr char kTaskHelp[] =
    "usage: muster task reset --leader HOST:PORT [flags] /job:NAME/task:ID\n\n"
    "One task of a running leader:\n"
    "  reset TASK   move a task in ERROR back to DISCONNECTED, so that it may register again\n\n"
    "Run `muster task reset --help` for its flags.\n";

// Adds what to do to the refusal of a CONNECTED task.
absl::Status Explain(const absl::Status& status, const std::string& task) {
  if (!absl::IsPermissionDenied(status)) return status;
  return absl::PermissionDeniedError(
      absl::StrCat(status.message(), ". muster task reset resets a task in ERROR; ", task,
                   " is CONNECTED (see muster status): only the process on which it registered "
                   "may reset it"));
}

int Reset(const ParsedCommand& parsed) {
  const CommandSpec& spec = ResetSpec();
  auto task = ParseTaskName(parsed.args.front());
  if (!task.ok()) return ReportUsageError(spec.name, task.status());
  auto leader = LeaderFlag();
  if (!leader.ok()) return ReportLeaderFlagError(spec.name, leader.status());
  auto timeout = TimeoutFlag(kDefaultTimeout);
  if (!timeout.ok()) return ReportUsageError(spec.name, timeout.status());
  auto session = LeaderSession::Connect(*leader, *timeout);
  if (!session.ok()) return ReportFailure(spec.name, session.status());
  auto reply = (*session)->Ask<proto::ResetTaskResponse>(*timeout, requests::ResetTask(*task));
  std::string name = TaskName(*task);
  if (!reply.ok()) return ReportFailure(spec.name, Explain(reply.status(), name));
  std::printf("%s is DISCONNECTED: a process may register it again\n", name.c_str());
  return kExitOk;
}

}  // namespace

const CommandSpec* TaskSpec(const std::string& verb) {
  return verb == "reset" ? &ResetSpec() : nullptr;
}

int RunTask(const std::vector<std::string>& argv) {
  if (argv.empty()) {
    std::fputs(kTaskHelp, stderr);
    return kExitUsage;
  }
  const std::string& verb = argv[0];
  if (verb == "--help" || verb == "-h" || verb == "help") {
    std::fputs(kTaskHelp, stdout);
    return kExitOk;
  }
  const CommandSpec* spec = TaskSpec(verb);
  if (spec == nullptr) {
    return ReportUsageError("task", absl::InvalidArgumentError(absl::StrCat(
                                        "unknown verb \"", verb, "\"; the task verb is reset")));
  }
  ParsedCommand parsed;
  std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (auto done = ParseOrExit(*spec, rest, &parsed)) return *done;
  return Reset(parsed);
}

}  // namespace muster::cli
