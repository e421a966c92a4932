// `muster run` under srun (run_modes.h): one launcher per node of a Slurm step shares the job.
#include <cstdio>

#include <absl/flags/declare.h>
#include <absl/flags/flag.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>

#include "muster/net/transport/wire/tcp_dial.h"
#include "muster/tools/common/cli_common.h"
#include "muster/tools/run/run_command.h"
#include "muster/tools/run/run_modes.h"
#include "muster/tools/serve/serve_command.h"

ABSL_DECLARE_FLAG(std::string, host);
ABSL_DECLARE_FLAG(int32_t, port);

namespace muster::cli {
namespace {

constexpr char kCommand[] = "run";

}  // namespace

// One launcher per node of a Slurm step (srun muster run ...): the step's first node hosts the
// leader and each launcher runs its share. The leader listens on every interface (a node's name
// may resolve to a loopback address in its own /etc/hosts), or on an address literal the node
// list names, or on --host; the others reach it at --host if that names one address, else at
// the first node's name.
int RunInStep(LauncherConfig config, const SlurmStep& step, const std::set<std::string>& given) {
  if (given.count("job") == 0) {
    return ReportUsageError(
        kCommand,
        absl::InvalidArgumentError("under srun every launcher needs the job's --job (the same "
                                   "command line on every node): it splits the tasks among them"));
  }
  auto options = ServeOptionsFromFlags();
  if (!options.ok()) return ReportUsageError(kCommand, options.status());
  const int32_t port = absl::GetFlag(FLAGS_port);
  if (port <= 0) {
    return ReportUsageError(
        kCommand, absl::InvalidArgumentError("under srun the other launchers must know the "
                                             "leader's port: give --port a fixed port, not 0"));
  }
  auto share = StepShare(options->config, step.launcher, step.num_launchers);
  if (!share.ok()) return ReportUsageError(kCommand, share.status());
  sockaddr_storage literal;
  std::string listen =
      NumericAddress(step.first_node, port, &literal) ? step.first_node : "0.0.0.0";
  std::string dial = step.first_node;
  if (given.count("host") != 0) {
    listen = absl::GetFlag(FLAGS_host);
    if (listen != "0.0.0.0" && listen != "::") dial = listen;
  }
  const std::string leader = HostPort(dial, port);
  std::fprintf(stderr, "muster run: Slurm (%s): launcher %d of %d, tasks %s, leader %s\n",
               step.evidence.c_str(), step.launcher, step.num_launchers, share->c_str(),
               leader.c_str());
  // Launcher 0's node may come up later (an image to import, a slow prolog): the others wait.
  if (given.count("timeout") == 0) {
    absl::SetFlag(&FLAGS_timeout, std::optional<absl::Duration>(absl::Minutes(5)));
  }
  if (step.launcher == 0) {
    absl::SetFlag(&FLAGS_host, listen);
    return Host(std::move(config), *share, /*published=*/leader);
  }
  absl::SetFlag(&FLAGS_leader, leader);
  return Join(std::move(config), *share, /*in_step=*/true);
}

absl::StatusOr<std::string> StepShare(const proto::CoordinationServiceConfig& config, int launcher,
                                      int launchers) {
  const std::vector<proto::CoordinatedTask> all = AllTasks(config);
  const int64_t n = static_cast<int64_t>(all.size());
  if (launchers < 1 || launcher < 0 || launcher >= launchers) {
    return absl::InvalidArgumentError(
        absl::StrCat("launcher ", launcher, " of ", launchers, " does not exist"));
  }
  if (n < launchers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the job has ", n, " task(s) for ", launchers,
        " launchers: run one launcher per node (srun --ntasks-per-node=1) and at least as "
        "many tasks as nodes"));
  }
  const int64_t begin = n * launcher / launchers, end = n * (launcher + 1) / launchers;
  std::vector<std::string> parts;
  for (int64_t i = begin; i < end;) {
    int64_t last = i;
    while (last + 1 < end && all[last + 1].job_name() == all[i].job_name() &&
           all[last + 1].task_id() == all[last].task_id() + 1) {
      ++last;
    }
    parts.push_back(last == i ? absl::StrCat(all[i].job_name(), ":", all[i].task_id())
                              : absl::StrCat(all[i].job_name(), ":", all[i].task_id(), "-",
                                             all[last].task_id()));
    i = last + 1;
  }
  return absl::StrJoin(parts, ",");
}

}  // namespace muster::cli
