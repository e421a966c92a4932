#include "muster/tools/tls_init_command.h"

#include <cstdio>
#include <string>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/strings/str_join.h>

#include "muster/net/transport/job_certificates.h"
#include "muster/tools/cli_common.h"
#include "muster/tools/command_line.h"

ABSL_FLAG(std::vector<std::string>, names, std::vector<std::string>({"leader", "worker"}),
          "tls init: the nodes to make certificates for (NAME.pem and NAME.key each)");
ABSL_FLAG(int32_t, days, 365, "tls init: how long the certificates are valid, in days");

namespace muster::cli {
namespace {

constexpr char kCommand[] = "tls init";

const CommandSpec& TlsInitSpec() {
  static const CommandSpec spec{
      .name = "tls init",
      .synopsis = "DIR [--names leader,worker] [--days 365]",
      .summary =
          "Makes a CA for one job and a certificate and key for each node name, for mutual\n"
          "TLS (muster serve --tls-cert DIR/leader.pem --tls-key DIR/leader.key --tls-ca\n"
          "DIR/ca.pem; workers and the CLI likewise). Writes DIR/ca.pem, DIR/ca.key and\n"
          "DIR/NAME.pem, DIR/NAME.key (keys readable by the owner only); never overwrites.\n"
          "Keep ca.key away from the nodes. Any certificate the CA signs joins the job.",
      .flags = {"names", "days"},
      .min_args = 1,
      .max_args = 1,
  };
  return spec;
}

}  // namespace

int RunTls(const std::vector<std::string>& argv) {
  if (argv.empty() || argv.front() != "init") {
    return ReportUsageError(
        "tls", absl::InvalidArgumentError("the only tls command is `muster tls init DIR`"));
  }
  ParsedCommand parsed;
  std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (auto done = ParseOrExit(TlsInitSpec(), rest, &parsed)) return *done;
  const std::string& dir = parsed.args.front();
  std::vector<std::string> names = absl::GetFlag(FLAGS_names);
  int days = absl::GetFlag(FLAGS_days);
  absl::Status written = WriteJobCertificates(dir, names, days);
  if (absl::IsInvalidArgument(written)) return ReportUsageError(kCommand, written);
  if (!written.ok()) return ReportFailure(kCommand, written);
  std::printf("wrote %s/ca.pem, ca.key and %s (.pem, .key), valid %d days\n", dir.c_str(),
              absl::StrJoin(names, ", ").c_str(), days);
  return kExitOk;
}

}  // namespace muster::cli
