// The muster command: runs a leader (serve, run) and inspects or operates one (status, kv, task).
//
//   muster serve --job worker=4 [--job ps=2] [--port 7400]
//   muster run --job worker=4 [--restart one-for-all] -- CMD ARGS...
//   muster status --leader 127.0.0.1:7400 [--watch] [--json] [--bring-up]
//   muster events --leader 127.0.0.1:7400 [--follow] [--json]
//   muster kv get|put|ls|rm|watch --leader 127.0.0.1:7400 KEY [VALUE]
//   muster task reset --leader 127.0.0.1:7400 /job:worker/task:0
//   muster tls init DIR [--names leader,worker]
//
// Exit codes: 0 ok, 1 the request failed, 2 usage error. docs/operations.md has the reference.
#include <cstdio>
#include <string>
#include <vector>

#include <absl/synchronization/mutex.h>

#include "muster/tools/common/command_line.h"
#include "muster/tools/events/events_command.h"
#include "muster/tools/job/status_command.h"
#include "muster/tools/job/task_command.h"
#include "muster/tools/kv/kv_command.h"
#include "muster/tools/run/run_command.h"
#include "muster/tools/serve/serve_command.h"
#include "muster/tools/serve/tls_init_command.h"

namespace {

constexpr char kUsage[] =
    "usage: muster <command> [flags] [args]\n\n"
    "commands:\n"
    "  serve    run a leader: muster serve --job worker=4 [--job ps=2] [--port 7400]\n"
    "  run      run a job's processes and restart what fails: muster run --job worker=4 -- CMD\n"
    "  status   show tasks, barriers and key-value directories of a running leader\n"
    "  events   print the job's events (tasks registered and failed, barriers, restarts)\n"
    "  kv       get|put|ls|rm|watch keys of a running leader\n"
    "  task     reset /job:NAME/task:ID: let a task in ERROR register again\n"
    "  tls      init DIR: a CA and node certificates for mutual TLS\n\n"
    "Run `muster <command> --help` for its flags. Exit codes: 0 ok, 1 the request failed,\n"
    "2 usage error.\n";

}  // namespace

int main(int argc, char** argv) {
  // Debian's abseil is built with absl::Mutex's deadlock detection on (a debug build's default),
  // which makes every lock update a process-wide graph; off, as in abseil's release builds.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return muster::cli::kExitUsage;
  }
  std::string command = args.front();
  args.erase(args.begin());
  if (command == "serve") return muster::cli::RunServe(args);
  if (command == "run") return muster::cli::RunRun(args);
  if (command == "status") return muster::cli::RunStatus(args);
  if (command == "events") return muster::cli::RunEvents(args);
  if (command == "kv") return muster::cli::RunKv(args);
  if (command == "task") return muster::cli::RunTask(args);
  if (command == "tls") return muster::cli::RunTls(args);
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return muster::cli::kExitOk;
  }
  std::fprintf(stderr, "muster: unknown command \"%s\"\n\n%s", command.c_str(), kUsage);
  return muster::cli::kExitUsage;
}
