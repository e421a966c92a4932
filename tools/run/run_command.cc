#include "muster/tools/run/run_command.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>

#include <absl/flags/declare.h>
#include <absl/flags/flag.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <absl/strings/strip.h>
#include <caf/scoped_actor.hpp>

#include "muster/actors/supervision/supervision_policy.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/session/etcd/etcd_security.h"
#include "muster/net/launcher/launcher_actor.h"
#include "muster/net/leader/leader.h"
#include "muster/net/process/cluster/cluster_environment.h"
#include "muster/net/process/shutdown_signals.h"
#include "muster/net/transport/tls/certificate_identity.h"
#include "muster/net/transport/tls/job_certificates.h"
#include "muster/tools/common/cli_common.h"
#include "muster/tools/run/run_modes.h"
#include "muster/tools/serve/serve_command.h"

ABSL_DECLARE_FLAG(std::string, host);
ABSL_DECLARE_FLAG(int32_t, port);
ABSL_DECLARE_FLAG(std::string, http);
ABSL_DECLARE_FLAG(std::string, token_file);
ABSL_DECLARE_FLAG(std::string, tls_cert);
ABSL_DECLARE_FLAG(std::string, tls_key);
ABSL_DECLARE_FLAG(std::string, tls_ca);

ABSL_FLAG(std::string, tasks, "",
          "run: the tasks whose processes this launcher runs, as task ids and ranges of the "
          "first --job (\"0-3,6\") or behind a job name (\"ps:0-1\"). Default with a hosted "
          "leader: every task; required with --leader. tls init: the jobs whose tasks get a "
          "certificate each, naming the task, as JOB=N (\"worker=8,ps=2\")");
ABSL_FLAG(std::string, restart, "none",
          "run: what a task failure restarts: one-for-all (every task, as a new round with an "
          "empty key-value store), one-for-one (the failed task; the others are not told), or "
          "none (the job fails). For the leader that muster run hosts");
ABSL_FLAG(int32_t, max_restarts, 3,
          "run: more task failures than this within --restart-window fail the job for good");
ABSL_FLAG(absl::Duration, restart_window, absl::Seconds(60), "run: the window of --max-restarts");
ABSL_FLAG(int32_t, spares, 0,
          "run: spare processes of CMD this launcher keeps running, without a task: a restarted "
          "task takes one at once instead of starting a new process (the program waits in "
          "Agent.from_environment or muster:// until then)");
ABSL_FLAG(absl::Duration, stop_timeout, absl::Seconds(10),
          "run: how long a task process has to leave after SIGTERM (or SIGINT) before SIGKILL; "
          "also how long the tasks of a failed job have to leave by themselves");

namespace muster::cli {
namespace {

constexpr char kCommand[] = "run";

absl::StatusOr<std::shared_ptr<SupervisionPolicy>> RestartPolicyFromFlags() {
  std::string restart = absl::GetFlag(FLAGS_restart);
  int32_t max = absl::GetFlag(FLAGS_max_restarts);
  absl::Duration window = absl::GetFlag(FLAGS_restart_window);
  if (max < 0) return absl::InvalidArgumentError("--max-restarts may not be negative");
  if (window <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--restart-window must be positive");
  }
  if (restart == "none") return std::make_shared<FateSharing>();
  if (restart == "one-for-one") {
    return std::make_shared<RestartIntensity>(std::make_unique<OneForOne>(), max, window);
  }
  if (restart == "one-for-all") {
    return std::make_shared<RestartIntensity>(std::make_unique<OneForAll>(), max, window);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown --restart \"", restart,
                                                 "\"; expected one-for-all, one-for-one or none"));
}

}  // namespace

std::vector<proto::CoordinatedTask> AllTasks(const proto::CoordinationServiceConfig& config) {
  std::vector<proto::CoordinatedTask> tasks;
  for (const auto& job : config.coordinated_job_list()) {
    for (int i = 0; i < job.num_tasks(); ++i) {
      proto::CoordinatedTask task;
      task.set_job_name(job.name());
      task.set_task_id(i);
      tasks.push_back(std::move(task));
    }
  }
  return tasks;
}

namespace {

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

std::string Absolute(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return absl::StrCat(cwd, "/", path);
}

// The token and TLS files given on the command line, for the task processes too.
TaskProcess::Environment FileEnvironment() {
  TaskProcess::Environment env;
  for (auto [flag, name] : {std::pair{absl::GetFlag(FLAGS_token_file), "MUSTER_TOKEN_FILE"},
                            {absl::GetFlag(FLAGS_tls_cert), "MUSTER_TLS_CERT"},
                            {absl::GetFlag(FLAGS_tls_key), "MUSTER_TLS_KEY"},
                            {absl::GetFlag(FLAGS_tls_ca), "MUSTER_TLS_CA"}}) {
    if (!flag.empty()) env.emplace_back(name, Absolute(flag));
  }
  return env;
}

// When the job's CA binds tasks to certificates (muster tls init --tasks), each task's process
// gets its own, from the directory of this launcher's certificate: DIR/task-JOB-ID.pem and
// .key. Possible errors: InvalidArgument naming a task certificate that is missing.
absl::Status AddTaskCertificates(LauncherConfig* config) {
  absl::StatusOr<TlsFiles> files = TlsFromFlags();
  if (!files.ok() || !files->enabled()) return absl::OkStatus();  // reported by the connection
  absl::StatusOr<bool> binds = CaBindsTasks(files->ca);
  if (!binds.ok() || !*binds) return absl::OkStatus();
  // A spare's connection is made before it has a task, with this launcher's certificate.
  if (config->spares > 0) {
    return absl::InvalidArgumentError(
        "--spares cannot be used when the job's CA binds tasks to their certificates (muster "
        "tls init --tasks): a spare connects before it knows its task");
  }
  const std::string cert = Absolute(files->cert);
  const std::string dir = cert.substr(0, cert.rfind('/'));
  for (const proto::CoordinatedTask& task : config->tasks) {
    const std::string base =
        absl::StrCat(dir, "/", TaskCertificateName(task.job_name(), task.task_id()));
    const std::string task_cert = base + ".pem", task_key = base + ".key";
    if (::access(task_cert.c_str(), R_OK) != 0 || ::access(task_key.c_str(), R_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("the job's CA binds tasks to their certificates, and ", TaskName(task),
                       " has none beside this launcher's (", task_cert,
                       " and .key): copy it there from the "
                       "directory of muster tls init --tasks"));
    }
    config->task_environment[TaskName(task)] = {{"MUSTER_TLS_CERT", task_cert},
                                                {"MUSTER_TLS_KEY", task_key}};
  }
  return absl::OkStatus();
}

// Runs the launcher until it is done; signals are forwarded to it. Returns the exit code.
int Launch(caf::actor_system& system, caf::scoped_actor& self, LauncherConfig config) {
  // Lives until the launcher is done: a second signal ends a stop that hangs.
  ShutdownSignalForwarder forwarder{caf::actor_cast<caf::actor>(self)};
  auto launcher = SpawnLauncher(system, std::move(config), caf::actor_cast<LauncherListener>(self));
  int code = kExitFailed;
  bool running = true;
  self->receive_while(running)(
      [&](launcher_done_atom, int exit_code, const std::string& message) {
        std::fprintf(stderr, "muster run: %s\n", message.c_str());
        code = exit_code;
        running = false;
      },
      [&](shutdown_atom, int signal) { self->send(launcher, shutdown_atom::value, signal); });
  return code;
}

}  // namespace

int Host(LauncherConfig config, const std::string& tasks, const std::string& published) {
  auto options = ServeOptionsFromFlags();
  if (!options.ok()) return ReportUsageError(kCommand, options.status());
  auto policy = RestartPolicyFromFlags();
  if (!policy.ok()) return ReportUsageError(kCommand, policy.status());
  options->policy = *std::move(policy);
  auto node = NodeOptionsFromFlags();
  if (!node.ok()) return ReportUsageError(kCommand, node.status());
  auto token = TokenFromFlags();
  if (!token.ok()) return ReportUsageError(kCommand, token.status());
  if (tasks.empty()) {
    config.tasks = AllTasks(options->config);
  } else {
    auto parsed = ParseTaskList(tasks, options->config.coordinated_job_list(0).name());
    if (!parsed.ok()) return ReportUsageError(kCommand, parsed.status());
    config.tasks = *std::move(parsed);
  }
  BlockShutdownSignals();
  NodeConfig node_config(*node);
  caf::actor_system system{node_config};
  LeaderEndpoint endpoint{.host = absl::GetFlag(FLAGS_host),
                          .port = static_cast<uint16_t>(absl::GetFlag(FLAGS_port)),
                          .token = *std::move(token)};
  if (std::string http = absl::GetFlag(FLAGS_http); !http.empty()) {
    auto parsed = ParseHttpAddress(http);
    if (!parsed.ok()) return ReportUsageError(kCommand, parsed.status());
    endpoint.http = *std::move(parsed);
  }
  auto leader = Leader::Start(system, *options, std::move(endpoint));
  if (!leader.ok()) return ReportFailure(kCommand, leader.status());
  std::string http = (*leader)->http_url();
  std::fprintf(stderr, "muster run: leader ready at %s (%s), %zu task(s) here%s%s\n",
               (*leader)->address().c_str(), options->policy->Describe().c_str(),
               config.tasks.size(), http.empty() ? "" : ", metrics and live page at ",
               http.c_str());
  if (absl::Status own = AddTaskCertificates(&config); !own.ok()) {
    return ReportUsageError(kCommand, own);
  }
  config.leader = (*leader)->coordinator();
  config.leader_address = published.empty() ? (*leader)->address() : published;
  config.hosting = true;
  int code = kExitFailed;
  {
    caf::scoped_actor self{system};
    code = Launch(system, self, std::move(config));
  }
  (*leader)->Stop();
  return code;
}

int Join(LauncherConfig config, const std::string& tasks, bool in_step) {
  if (tasks.empty()) {
    return ReportUsageError(
        kCommand, absl::InvalidArgumentError("--leader needs --tasks: the tasks this host runs"));
  }
  // In a Slurm step every launcher has the same command line; the hosting one's --restart
  // decides.
  if (!in_step && absl::GetFlag(FLAGS_restart) != "none") {
    return ReportUsageError(
        kCommand, absl::InvalidArgumentError("--restart is for the leader that muster run hosts; "
                                             "with --leader, that leader's policy decides"));
  }
  auto address = LeaderFlag(/*wait_for_leader=*/true, absl::Seconds(30));
  if (!address.ok()) return ReportLeaderFlagError(kCommand, address.status());
  auto timeout = TimeoutFlag(absl::Seconds(30));
  if (!timeout.ok()) return ReportUsageError(kCommand, timeout.status());
  auto parsed = ParseTaskList(tasks, "worker");
  if (!parsed.ok()) return ReportUsageError(kCommand, parsed.status());
  config.tasks = *std::move(parsed);
  if (absl::Status own = AddTaskCertificates(&config); !own.ok()) {
    return ReportUsageError(kCommand, own);
  }
  BlockShutdownSignals();
  // This host may start before the leader's: wait for it (at most --timeout).
  auto session = LeaderSession::Connect(*address, *timeout, /*wait_for_leader=*/true);
  if (!session.ok()) return ReportFailure(kCommand, session.status());
  config.leader = (*session)->leader();
  config.leader_address = address->List();
  config.leader_registry = address->registry;
  if (!address->others.empty()) {
    // An HA job: when its leader is lost, the launcher looks for the next one for --timeout
    // and registers with it again, its tasks running on.
    auto token = TokenFromFlags();
    if (!token.ok()) return ReportFailure(kCommand, token.status());
    config.follow =
        LeaderSessionOptions{.connect = {.host = address->host,
                                         .port = address->port,
                                         .timeout = ToTimespan(*timeout),
                                         .wait_for_leader = true,
                                         .other_leaders = address->others,
                                         .registry = address->registry,
                                         .registry_security = RegistrySecurity(address->registry)},
                             .token = *std::move(token),
                             .authenticate_timeout = ToTimespan(*timeout)};
  }
  return Launch((*session)->system(), (*session)->self(), std::move(config));
}

const CommandSpec& RunSpec() {
  static const CommandSpec spec{
      .name = "run",
      .synopsis =
          "--job NAME=TASKS [--restart one-for-all|one-for-one|none] [flags] -- CMD ARGS..."
          "\n       muster run --leader HOST:PORT --tasks 4-7 [flags] -- CMD ARGS...",
      .summary =
          "Runs one process of CMD per task and restarts what fails. Hosts the leader in this\n"
          "process (or joins one with --leader, as a further host of the job). Each process\n"
          "gets its identity in the environment: MUSTER_LEADER, MUSTER_JOB, MUSTER_TASK,\n"
          "MUSTER_GENERATION, MUSTER_ROUND, and RANK, WORLD_SIZE, LOCAL_RANK,\n"
          "LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT for PyTorch. Output lines are prefixed\n"
          "with the task's name. Exits 0 when every process exited 0 and the job did not fail;\n"
          "1 naming the task and error that ended it; 128+N after signal N (forwarded to the\n"
          "tasks, SIGKILL after --stop-timeout). Under srun (one launcher per node), the\n"
          "launchers share the tasks and the step's first node hosts the leader. Given an HA\n"
          "job's leaders, it follows a failover: the tasks run on, and it registers with the\n"
          "next active leader (looking for it up to --timeout).",
      .flags = {"job",
                "settle_time",
                "host",
                "port",
                "http",
                "leader",
                "tasks",
                "restart",
                "max_restarts",
                "restart_window",
                "stop_timeout",
                "spares",
                "heartbeat_timeout",
                "connection_loss_grace",
                "shutdown_barrier_timeout",
                "timeout",
                "token_file",
                "tls_cert",
                "tls_key",
                "tls_ca",
                "max_frame_size",
                "handshake_timeout",
                "max_unfinished_frames",
                "frame_progress_timeout",
                "max_connections_per_host",
                "stuck_after",
                "max_step_lag",
                "events"},
      .repeated = {"job"},
      .min_args = 1,
      .max_args = INT_MAX,
  };
  return spec;
}

absl::StatusOr<std::vector<proto::CoordinatedTask>> ParseTaskList(const std::string& text,
                                                                  const std::string& default_job) {
  std::vector<proto::CoordinatedTask> tasks;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    part = absl::StripAsciiWhitespace(part);
    std::string job = default_job;
    absl::string_view range = part;
    if (size_t colon = part.find(':'); colon != absl::string_view::npos) {
      job = std::string(part.substr(0, colon));
      range = part.substr(colon + 1);
    }
    std::vector<absl::string_view> ends = absl::StrSplit(range, '-');
    int32_t first = 0;
    int32_t last = 0;
    bool ok = !job.empty() && ends.size() <= 2 && absl::SimpleAtoi(ends[0], &first) &&
              absl::SimpleAtoi(ends.back(), &last) && first >= 0 && first <= last &&
              last - first < 100'000;
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tasks: \"", part, "\" is not a task id or range such as 3, 0-3 or ps:0-1"));
    }
    for (int32_t id = first; id <= last; ++id) {
      proto::CoordinatedTask task;
      task.set_job_name(job);
      task.set_task_id(id);
      tasks.push_back(std::move(task));
    }
  }
  if (tasks.empty()) return absl::InvalidArgumentError("--tasks names no task");
  return tasks;
}

int RunRun(const std::vector<std::string>& argv) {
  ParsedCommand parsed;
  if (auto done = ParseOrExit(RunSpec(), argv, &parsed)) return *done;
  if (std::find(argv.begin(), argv.end(), "--") == argv.end()) {
    return ReportUsageError(kCommand, absl::InvalidArgumentError(
                                          "put the command after --: muster run [flags] -- CMD"));
  }
  absl::Duration stop = absl::GetFlag(FLAGS_stop_timeout);
  if (stop <= absl::ZeroDuration()) {
    return ReportUsageError(kCommand,
                            absl::InvalidArgumentError("--stop-timeout must be positive"));
  }
  const int32_t spares = absl::GetFlag(FLAGS_spares);
  if (spares < 0 || spares > 1024) {
    return ReportUsageError(kCommand,
                            absl::InvalidArgumentError("--spares must be between 0 and 1024"));
  }
  LauncherConfig config;
  config.spares = spares;
  config.host = HostName();
  config.command = parsed.args;
  config.environment = FileEnvironment();
  config.stop_timeout = ToTimespan(stop);
  const std::string tasks = absl::GetFlag(FLAGS_tasks);
  if (absl::GetFlag(FLAGS_leader).empty() && tasks.empty()) {
    auto step = DetectSlurmStep(ProcessEnvironment());
    if (!step.ok()) return ReportUsageError(kCommand, step.status());
    if (*step && (*step)->num_launchers > 1) {
      return RunInStep(std::move(config), **step, parsed.given);
    }
  }
  if (absl::GetFlag(FLAGS_leader).empty()) return Host(std::move(config), tasks);
  return Join(std::move(config), tasks);
}

}  // namespace muster::cli
