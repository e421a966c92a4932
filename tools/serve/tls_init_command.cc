#include "muster/tools/serve/tls_init_command.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>

#include "muster/net/transport/tls/job_certificates.h"
#include "muster/tools/common/cli_common.h"
#include "muster/tools/common/command_line.h"

ABSL_FLAG(std::vector<std::string>, names, std::vector<std::string>({"leader", "worker"}),
          "tls init: the nodes to make certificates for (NAME.pem and NAME.key each); cli, the "
          "muster command's own, is always made too");
ABSL_FLAG(int32_t, days, 365, "tls init: how long the certificates are valid, in days");

namespace muster::cli {
namespace {

constexpr char kCommand[] = "tls init";
// The certificate of the muster command itself (status, kv, task).
constexpr char kCliName[] = "cli";

constexpr char kTlsHelp[] =
    "usage: muster tls init DIR [--names leader,worker] [--days 365]\n\n"
    "Certificates for a job's mutual TLS:\n"
    "  init DIR   a CA, and a certificate and key for each node name and for the muster\n"
    "             command (DIR/cli.pem, DIR/cli.key)\n\n"
    "Run `muster tls init --help` for its flags.\n";

const CommandSpec& TlsInitSpec() {
  static const CommandSpec spec{
      .name = "tls init",
      .synopsis = "DIR [--names leader,worker] [--days 365]",
      .summary =
          "Makes a CA for one job and a certificate and key for each node name, for mutual\n"
          "TLS (muster serve --tls-cert DIR/leader.pem --tls-key DIR/leader.key --tls-ca\n"
          "DIR/ca.pem; workers likewise). Writes DIR/ca.pem, DIR/ca.key and DIR/NAME.pem,\n"
          "DIR/NAME.key (keys readable by the owner only), and DIR/cli.pem, DIR/cli.key for\n"
          "the muster command (status, kv, task: --tls-cert DIR/cli.pem --tls-key DIR/cli.key\n"
          "--tls-ca DIR/ca.pem, or MUSTER_TLS_CERT/KEY/CA); never overwrites. Keep ca.key\n"
          "away from the nodes. Any certificate the CA signs joins the job.",
      .flags = {"names", "days"},
      .min_args = 1,
      .max_args = 1,
  };
  return spec;
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
  if (std::find(names.begin(), names.end(), kCliName) == names.end()) names.push_back(kCliName);
  int days = absl::GetFlag(FLAGS_days);
  absl::Status written = WriteJobCertificates(dir, names, days);
  if (absl::IsInvalidArgument(written)) return ReportUsageError(kCommand, written);
  if (!written.ok()) return ReportFailure(kCommand, written);
  std::printf(
      "wrote %s/ca.pem, ca.key and %s (.pem, .key), valid %d days; the muster command uses "
      "%s/cli.pem and cli.key\n",
      dir.c_str(), absl::StrJoin(names, ", ").c_str(), days, dir.c_str());
  return kExitOk;
}

}  // namespace muster::cli
