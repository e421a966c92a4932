#include "muster/tools/serve/tls_init_command.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>

#include "muster/net/transport/tls/certificate_identity.h"
#include "muster/net/transport/tls/job_certificates.h"
#include "muster/tools/common/cli_common.h"
#include "muster/tools/common/command_line.h"

ABSL_FLAG(std::vector<std::string>, names, std::vector<std::string>({"leader", "worker"}),
          "tls init: the nodes to make certificates for (NAME.pem and NAME.key each); cli, the "
          "muster command's own, is always made too");
ABSL_FLAG(int32_t, days, 365, "tls init: how long the certificates are valid, in days");
ABSL_DECLARE_FLAG(std::string, tasks);  // tools/run/run_command.cc: shared with `muster run`

namespace muster::cli {
namespace {

constexpr char kCommand[] = "tls init";

constexpr char kTlsHelp[] =
    "usage: muster tls init DIR [--names leader,worker] [--tasks JOB=N,...] [--days 365]\n\n"
    "Certificates for a job's mutual TLS:\n"
    "  init DIR   a CA, and a certificate and key for each node name and for the muster\n"
    "             command (DIR/cli.pem, DIR/cli.key)\n\n"
    "Run `muster tls init --help` for its flags.\n";

const CommandSpec& TlsInitSpec() {
  static const CommandSpec spec{
      .name = "tls init",
      .synopsis = "DIR [--names leader,worker] [--tasks JOB=N,...] [--days 365]",
      .summary =
          "Makes a CA for one job and a certificate and key for each node name, for mutual\n"
          "TLS (muster serve --tls-cert DIR/leader.pem --tls-key DIR/leader.key --tls-ca\n"
          "DIR/ca.pem; workers likewise). Writes DIR/ca.pem, DIR/ca.key and DIR/NAME.pem,\n"
          "DIR/NAME.key (keys readable by the owner only), and DIR/cli.pem, DIR/cli.key for\n"
          "the muster command (status, kv, task: --tls-cert DIR/cli.pem --tls-key DIR/cli.key\n"
          "--tls-ca DIR/ca.pem, or MUSTER_TLS_CERT/KEY/CA); never overwrites. Keep ca.key\n"
          "away from the nodes. Any certificate the CA signs joins the job.\n\n"
          "With --tasks worker=8 (jobs and their task counts), also one certificate per task,\n"
          "naming it: DIR/task-worker-0.pem and .key to task-worker-7. A leader whose CA was\n"
          "made so accepts a task's registration, heartbeats, reports and barriers only from\n"
          "the certificate naming that task, and a launcher's (muster run) only from a node\n"
          "certificate of --names; the cli certificate may read and write keys but never act\n"
          "as a task. Give each task's process its own files (MUSTER_TLS_CERT and\n"
          "MUSTER_TLS_KEY; muster run does it when its --tls-cert's directory has them).",
      .flags = {"names", "tasks", "days"},
      .min_args = 1,
      .max_args = 1,
  };
  return spec;
}

// "worker=8,ps=2" -> {worker, 8}, {ps, 2}.
absl::StatusOr<std::vector<TaskCertificates>> ParseTaskJobs(const std::string& text) {
  std::vector<TaskCertificates> jobs;
  if (text.empty()) return jobs;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::pair<std::string, std::string> job_count = absl::StrSplit(part, absl::MaxSplits('=', 1));
    TaskCertificates job{.job = job_count.first};
    if (job.job.empty() || !absl::SimpleAtoi(job_count.second, &job.num_tasks)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tasks: \"", part, "\" is not JOB=N (a job name and its number of tasks, worker=8)"));
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace

int RunTls(const std::vector<std::string>& argv) {
  if (argv.empty()) {
    std::fputs(kTlsHelp, stderr);
    return kExitUsage;
  }
  const std::string& verb = argv.front();
  if (verb == "--help" || verb == "-h" || verb == "help") {
    std::fputs(kTlsHelp, stdout);
    return kExitOk;
  }
  if (verb != "init") {
    return ReportUsageError(
        "tls", absl::InvalidArgumentError(absl::StrCat(
                   "unknown verb \"", verb, "\"; the only tls command is `muster tls init DIR`")));
  }
  ParsedCommand parsed;
  std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (auto done = ParseOrExit(TlsInitSpec(), rest, &parsed)) return *done;
  const std::string& dir = parsed.args.front();
  std::vector<std::string> names = absl::GetFlag(FLAGS_names);
  if (std::find(names.begin(), names.end(), kCliCertificateName) == names.end())
    names.push_back(kCliCertificateName);
  int days = absl::GetFlag(FLAGS_days);
  absl::StatusOr<std::vector<TaskCertificates>> tasks = ParseTaskJobs(absl::GetFlag(FLAGS_tasks));
  if (!tasks.ok()) return ReportUsageError(kCommand, tasks.status());
  absl::Status written = WriteJobCertificates(dir, names, days, *tasks);
  if (absl::IsInvalidArgument(written)) return ReportUsageError(kCommand, written);
  if (!written.ok()) return ReportFailure(kCommand, written);
  std::printf(
      "wrote %s/ca.pem, ca.key and %s (.pem, .key), valid %d days; the muster command uses "
      "%s/cli.pem and cli.key\n",
      dir.c_str(), absl::StrJoin(names, ", ").c_str(), days, dir.c_str());
  for (const TaskCertificates& job : *tasks) {
    std::printf(
        "wrote %s/task-%s-0 to task-%s-%d (.pem, .key): one per task of job %s, which "
        "may act only as that task\n",
        dir.c_str(), job.job.c_str(), job.job.c_str(), job.num_tasks - 1, job.job.c_str());
  }
  return kExitOk;
}

}  // namespace muster::cli
