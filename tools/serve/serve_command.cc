#include "muster/tools/serve/serve_command.h"

#include <cstdio>
#include <memory>
#include <optional>

#include <absl/flags/flag.h>
#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/time/clock.h>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/actors/supervision/supervision_policy.h"
#include "muster/messages/incarnation.h"
#include "muster/messages/task_name.h"
#include "muster/net/leader/job_spec.h"
#include "muster/net/leader/leader.h"
#include "muster/net/process/shutdown_signals.h"
#include "muster/net/transport/node_config.h"
#include "muster/tools/common/cli_common.h"
#include "muster/tools/common/job_watch_actor.h"
#include "muster/tools/common/task_events.h"
#include "muster/tools/serve/serve_ha.h"

ABSL_FLAG(std::vector<std::string>, job, {},
          "A job as NAME=TASKS: tasks /job:NAME/task:0 .. TASKS-1, or NAME=MIN:MAX for an "
          "elastic job of MIN to MAX tasks. Repeat the flag (or give a comma-separated list) for "
          "several jobs");
ABSL_FLAG(absl::Duration, settle_time, absl::Seconds(5),
          "An elastic job forms this long after its MIN-th task connected, or at once when all "
          "MAX did");
ABSL_FLAG(std::string, host, "127.0.0.1", "Address to listen on (0.0.0.0: every interface)");
ABSL_FLAG(int32_t, port, 7400, "TCP port to listen on (0: any free port; the ready line says)");
ABSL_FLAG(std::string, direct_port, "0",
          "TCP port of direct key-value calls, which agents make on their calling threads "
          "(0: any free port; off: none; never with TLS or --ha-etcd). docs/protocol.md");
ABSL_FLAG(std::string, http, "",
          "HOST:PORT of the HTTP endpoint: Prometheus metrics at /metrics and the live page at / "
          "(port 0: any free port; the ready line says). Same token and TLS as the leader's port"
          " (empty: none)");
ABSL_FLAG(absl::Duration, heartbeat_timeout, absl::Seconds(10),
          "A connected task that sends no heartbeat for this long goes to ERROR (stale)");
ABSL_FLAG(bool, register_with_barrier, false,
          "RegisterTask returns only once every task has registered");
ABSL_FLAG(absl::Duration, register_timeout, absl::ZeroDuration(),
          "With --register-with-barrier: how long registration waits for every task before all "
          "of them fail (0: 1h)");
ABSL_FLAG(absl::Duration, shutdown_barrier_timeout, absl::ZeroDuration(),
          "Tasks shut down together, waiting up to this long for each other (0: each task "
          "shuts down alone)");
ABSL_FLAG(absl::Duration, connection_loss_grace, absl::ZeroDuration(),
          "How long a lost worker connection is tolerated before its task fails (0: at once)");
ABSL_FLAG(std::vector<std::string>, recoverable_job, {},
          "A job whose task failures are tolerated: its tasks may reset and register again. "
          "Repeatable");
ABSL_FLAG(int64_t, max_frame_size, muster::WireLimits{}.max_frame_bytes,
          "The largest network frame a connected peer may send, in bytes; a frame over it "
          "closes the connection before it is read (0: no limit)");
ABSL_FLAG(absl::Duration, handshake_timeout,
          absl::Milliseconds(muster::WireLimits{}.handshake_timeout_ms),
          "A connection that has not completed CAF's handshake after this long is closed "
          "(0: never)");
ABSL_FLAG(int64_t, max_unfinished_frames,
          static_cast<int64_t>(muster::WireLimits{}.max_unfinished_frame_bytes),
          "The bytes of large frames still arriving that all connections together may hold; a "
          "chunk over it closes its connection (0: no limit)");
ABSL_FLAG(absl::Duration, frame_progress_timeout,
          absl::Milliseconds(muster::WireLimits{}.frame_progress_timeout_ms),
          "A large frame must keep arriving: a connection whose next 64 KiB of it take longer "
          "is closed (0: never)");
ABSL_FLAG(int64_t, max_connections_per_host, muster::WireLimits{}.max_connections_per_host,
          "The most connections one peer address may hold open; further ones are closed as "
          "they arrive (0: no limit)");
ABSL_FLAG(int64_t, max_value_size, 0,
          "The largest value the key-value store takes, in bytes (0: 4 MiB)");
ABSL_FLAG(int64_t, max_key_size, 0, "The longest key, in bytes (0: 4 KiB)");
ABSL_FLAG(int64_t, max_keys_per_directory, 0,
          "The most keys under one top-level directory (0: 1,000,000)");
ABSL_FLAG(int64_t, max_store_size, 0,
          "The bytes of every key and value together (0: 1 GiB); writes over it are refused "
          "with RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_directories, 0,
          "The most top-level key-value directories (0: 100,000); a key in a new directory "
          "beyond them is refused with RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_barrier_id_size, 0, "The longest barrier id, in bytes (0: 1 KiB)");
ABSL_FLAG(int64_t, max_barrier_ids, 0,
          "The most distinct barrier ids the leader keeps (0: 100,000); a new id beyond them is "
          "refused with RESOURCE_EXHAUSTED");
ABSL_FLAG(absl::Duration, stuck_after, absl::ZeroDuration(),
          "A task whose reported step has not advanced for this long, while a task of its job "
          "with a higher step advanced, is stuck: it fails with DEADLINE_EXCEEDED and the "
          "policy decides (0: off)");
ABSL_FLAG(int64_t, max_step_lag, 0,
          "A task whose reported step is more than this many steps behind its job's median is "
          "stuck (0: off)");
ABSL_FLAG(std::string, state_dir, "",
          "Keep the job's state (keys, task incarnations, barrier results) in this directory, "
          "each change on disk before it is acknowledged; a leader restarted on the same dir "
          "continues the job and its tasks reconnect (agents need leader_reconnect_timeout). "
          "Empty: memory only, a leader restart ends the job");
ABSL_FLAG(std::string, events, "",
          "Append the job's events (tasks registered and failed, restarts, barriers, ...) to this "
          "file, one JSON object per line (docs/operations.md, \"The event log\"). The leader "
          "keeps its last 4096 events in memory either way (muster events)");
ABSL_FLAG(absl::Duration, reconnect_window, absl::ZeroDuration(),
          "With --state-dir: how long tasks that were connected when the leader went down have "
          "to reconnect to the restarted leader before they fail (0: --heartbeat-timeout)");
ABSL_FLAG(std::string, policy, "",
          "What a task failure does: fate-sharing (tell every task), job-scoped (tell the "
          "task's job), recoverable (tolerate failures of the --recoverable-job jobs). Default: "
          "recoverable with --recoverable-job, fate-sharing otherwise");

namespace muster::cli {
namespace {

constexpr char kCommand[] = "serve";

absl::StatusOr<int64_t> Millis(absl::Duration duration, absl::string_view flag) {
  if (duration < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " may not be negative"));
  }
  return absl::ToInt64Milliseconds(duration);
}

absl::StatusOr<std::shared_ptr<SupervisionPolicy>> PolicyFromFlags(
    const std::vector<std::string>& recoverable) {
  std::string policy = absl::GetFlag(FLAGS_policy);
  if (policy.empty()) policy = recoverable.empty() ? "fate-sharing" : "recoverable";
  if (policy == "recoverable") {
    if (recoverable.empty()) {
      return absl::InvalidArgumentError(
          "--policy recoverable needs the jobs to tolerate: add --recoverable-job NAME");
    }
    return std::make_shared<RecoverableJobs>(recoverable);
  }
  if (policy != "fate-sharing" && policy != "job-scoped") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown --policy \"", policy, "\"; expected fate-sharing, job-scoped or recoverable"));
  }
  if (!recoverable.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--recoverable-job needs --policy recoverable (its default); --policy ",
                     policy, " does not tolerate failures"));
  }
  if (policy == "job-scoped") return std::make_shared<JobScoped>();
  return std::make_shared<FateSharing>();
}

absl::Status CheckRecoverableJobs(const proto::CoordinationServiceConfig& config) {
  for (const std::string& name : config.recoverable_jobs()) {
    bool known = false;
    for (const auto& job : config.coordinated_job_list()) known |= job.name() == name;
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat("--recoverable-job ", name,
                                                     " is not one of the jobs; give it with --job ",
                                                     name, "=TASKS too"));
    }
  }
  return absl::OkStatus();
}

absl::Status SetTimeouts(proto::CoordinationServiceConfig* config) {
  absl::Duration heartbeat = absl::GetFlag(FLAGS_heartbeat_timeout);
  if (heartbeat <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--heartbeat-timeout must be positive");
  }
  config->set_heartbeat_timeout_in_ms(std::max<int64_t>(1, absl::ToInt64Milliseconds(heartbeat)));
  auto reg = Millis(absl::GetFlag(FLAGS_register_timeout), "--register-timeout");
  auto shutdown =
      Millis(absl::GetFlag(FLAGS_shutdown_barrier_timeout), "--shutdown-barrier-timeout");
  auto grace = Millis(absl::GetFlag(FLAGS_connection_loss_grace), "--connection-loss-grace");
  auto stuck = Millis(absl::GetFlag(FLAGS_stuck_after), "--stuck-after");
  auto settle = Millis(absl::GetFlag(FLAGS_settle_time), "--settle-time");
  for (const auto* ms : {&reg, &shutdown, &grace, &stuck, &settle}) {
    if (!ms->ok()) return ms->status();
  }
  bool with_barrier = absl::GetFlag(FLAGS_register_with_barrier);
  for (const auto& job : config->coordinated_job_list()) {
    if (with_barrier && job.min_tasks() > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--register-with-barrier waits for every task, but job ", job.name(), " is elastic (",
          job.min_tasks(), ":", job.num_tasks(),
          "): its tasks learn who takes part from WaitForMembership; drop the flag or give the "
          "job a fixed size"));
    }
  }
  config->set_membership_settle_ms(std::max<int64_t>(1, *settle));
  config->set_cluster_register_with_barrier(with_barrier);
  if (absl::Status elastic = CheckElasticJobs(*config); !elastic.ok()) return elastic;
  config->set_cluster_register_timeout_in_ms(*reg);
  config->set_shutdown_barrier_timeout_in_ms(*shutdown);
  config->set_connection_loss_grace_period_in_ms(*grace);
  config->set_stuck_after_ms(*stuck);
  return absl::OkStatus();
}

}  // namespace

const CommandSpec& ServeSpec() {
  static const CommandSpec spec{
      .name = "serve",
      .synopsis = "--job NAME=TASKS [--job ...] [--port 7400] [--host 127.0.0.1] [flags]",
      .summary =
          "Runs a standalone leader: the coordination service of one job set. Prints\n"
          "\"muster leader ready at HOST:PORT incarnation=0x...\" once it accepts\n"
          "connections, then one stamped line per task event (registered, stale, failed,\n"
          "disconnected). SIGINT or SIGTERM stops it (exit 0); waiting barrier calls get\n"
          "ABORTED.",
      .flags = {"job",
                "settle_time",
                "host",
                "port",
                "direct_port",
                "http",
                "heartbeat_timeout",
                "register_with_barrier",
                "register_timeout",
                "shutdown_barrier_timeout",
                "connection_loss_grace",
                "recoverable_job",
                "policy",
                "max_frame_size",
                "handshake_timeout",
                "max_unfinished_frames",
                "frame_progress_timeout",
                "max_connections_per_host",
                "token_file",
                "tls_cert",
                "tls_key",
                "tls_ca",
                "max_value_size",
                "max_key_size",
                "max_keys_per_directory",
                "max_store_size",
                "max_directories",
                "max_barrier_id_size",
                "max_barrier_ids",
                "stuck_after",
                "max_step_lag",
                "state_dir",
                "reconnect_window",
                "events",
                "ha_etcd",
                "ha_name",
                "ha_lease_ttl",
                "ha_advertise"},
      .repeated = {"job", "recoverable_job"},
  };
  return spec;
}

// --direct-port: the port (0: any free one), or none ("off").
absl::StatusOr<std::optional<uint16_t>> DirectPortFlag() {
  std::string flag = absl::GetFlag(FLAGS_direct_port);
  if (flag == "off") return std::optional<uint16_t>();
  int port = -1;
  if (!absl::SimpleAtoi(flag, &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--direct-port must be from 0 to 65535 (0: any free port) or off; got \"", flag, "\""));
  }
  return std::optional<uint16_t>(static_cast<uint16_t>(port));
}

absl::StatusOr<CoordinatorOptions> ServeOptionsFromFlags() {
  CoordinatorOptions options;
  options.incarnation = NewIncarnation();
  if (absl::Status jobs = AddJobSpecs(absl::GetFlag(FLAGS_job), &options.config); !jobs.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--job: ", jobs.message()));
  }
  std::vector<std::string> recoverable = absl::GetFlag(FLAGS_recoverable_job);
  for (const std::string& name : recoverable) options.config.add_recoverable_jobs(name);
  if (absl::Status known = CheckRecoverableJobs(options.config); !known.ok()) return known;
  auto policy = PolicyFromFlags(recoverable);
  if (!policy.ok()) return policy.status();
  options.policy = *std::move(policy);
  if (absl::Status timeouts = SetTimeouts(&options.config); !timeouts.ok()) return timeouts;
  for (auto [flag, value] :
       {std::pair{"--max-value-size", absl::GetFlag(FLAGS_max_value_size)},
        {"--max-key-size", absl::GetFlag(FLAGS_max_key_size)},
        {"--max-keys-per-directory", absl::GetFlag(FLAGS_max_keys_per_directory)},
        {"--max-store-size", absl::GetFlag(FLAGS_max_store_size)},
        {"--max-directories", absl::GetFlag(FLAGS_max_directories)},
        {"--max-barrier-id-size", absl::GetFlag(FLAGS_max_barrier_id_size)},
        {"--max-barrier-ids", absl::GetFlag(FLAGS_max_barrier_ids)},
        {"--max-step-lag", absl::GetFlag(FLAGS_max_step_lag)}}) {
    if (value < 0) return absl::InvalidArgumentError(absl::StrCat(flag, " may not be negative"));
  }
  options.config.set_max_value_bytes(absl::GetFlag(FLAGS_max_value_size));
  options.config.set_max_key_bytes(absl::GetFlag(FLAGS_max_key_size));
  options.config.set_max_keys_per_directory(absl::GetFlag(FLAGS_max_keys_per_directory));
  options.config.set_max_store_bytes(absl::GetFlag(FLAGS_max_store_size));
  options.config.set_max_directories(absl::GetFlag(FLAGS_max_directories));
  options.config.set_max_barrier_id_bytes(absl::GetFlag(FLAGS_max_barrier_id_size));
  options.config.set_max_barrier_ids(absl::GetFlag(FLAGS_max_barrier_ids));
  options.config.set_max_step_lag(absl::GetFlag(FLAGS_max_step_lag));
  options.state_dir = absl::GetFlag(FLAGS_state_dir);
  options.events_file = absl::GetFlag(FLAGS_events);
  absl::Duration window = absl::GetFlag(FLAGS_reconnect_window);
  if (window < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--reconnect-window may not be negative");
  }
  if (window > absl::ZeroDuration() && options.state_dir.empty() && !HaRequested()) {
    return absl::InvalidArgumentError(
        "--reconnect-window needs --state-dir (or --ha-etcd): without one a restarted leader "
        "knows no task");
  }
  options.reconnect_window = absl::ToChronoMilliseconds(window);
  int32_t port = absl::GetFlag(FLAGS_port);
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError("--port must be from 0 to 65535 (0: any free port)");
  }
  if (!DirectPortFlag().ok()) return DirectPortFlag().status();
  return options;
}

absl::StatusOr<NodeOptions> NodeOptionsFromFlags() {
  NodeOptions node;
  int64_t frame = absl::GetFlag(FLAGS_max_frame_size);
  if (frame < 0 || frame > int64_t{1} << 31) {
    return absl::InvalidArgumentError("--max-frame-size must be from 0 (no limit) to 2 GiB");
  }
  if (frame != 0 && frame < 64 * 1024) {
    return absl::InvalidArgumentError(
        "--max-frame-size below 64 KiB would refuse ordinary requests; use at least 65536");
  }
  node.wire_limits.max_frame_bytes = static_cast<uint32_t>(frame);
  absl::Duration handshake = absl::GetFlag(FLAGS_handshake_timeout);
  if (handshake < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--handshake-timeout may not be negative");
  }
  node.wire_limits.handshake_timeout_ms = absl::ToInt64Milliseconds(handshake);
  int64_t unfinished = absl::GetFlag(FLAGS_max_unfinished_frames);
  if (unfinished < 0) {
    return absl::InvalidArgumentError("--max-unfinished-frames may not be negative");
  }
  if (unfinished != 0 && frame != 0 && unfinished < frame) {
    return absl::InvalidArgumentError(
        "--max-unfinished-frames below --max-frame-size would refuse the largest frame even "
        "alone; give at least --max-frame-size, or 0 for no limit");
  }
  node.wire_limits.max_unfinished_frame_bytes = static_cast<uint64_t>(unfinished);
  absl::Duration progress = absl::GetFlag(FLAGS_frame_progress_timeout);
  if (progress < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--frame-progress-timeout may not be negative");
  }
  node.wire_limits.frame_progress_timeout_ms = absl::ToInt64Milliseconds(progress);
  int64_t per_host = absl::GetFlag(FLAGS_max_connections_per_host);
  if (per_host < 0 || per_host > (int64_t{1} << 31)) {
    return absl::InvalidArgumentError(
        "--max-connections-per-host must be from 0 (no limit) to 2^31");
  }
  node.wire_limits.max_connections_per_host = static_cast<uint32_t>(per_host);
  auto tls = TlsFromFlags();
  if (!tls.ok()) return tls.status();
  node.tls = *std::move(tls);
  return node;
}

void PrintLine(const std::string& line) {
  std::string stamp =
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3S%Ez", absl::Now(), absl::LocalTimeZone());
  std::printf("%s %s\n", stamp.c_str(), line.c_str());
  std::fflush(stdout);
}

namespace {

std::string Describe(const CoordinatorOptions& options) {
  std::vector<std::string> jobs;
  for (const auto& job : options.config.coordinated_job_list()) {
    jobs.push_back(job.min_tasks() > 0
                       ? absl::StrCat(job.name(), "=", job.min_tasks(), ":", job.num_tasks())
                       : absl::StrCat(job.name(), "=", job.num_tasks()));
  }
  return absl::StrCat("jobs ", absl::StrJoin(jobs, ","), ", policy ", options.policy->Describe(),
                      ", heartbeat timeout ", options.config.heartbeat_timeout_in_ms(), " ms");
}

void LogSnapshot(const proto::WatchJobStateResponse& before,
                 const proto::WatchJobStateResponse& after, bool first) {
  if (first) {
    std::vector<proto::CoordinatedTask> tasks;
    for (const auto& info : after.task_state()) tasks.push_back(info.task());
    PrintLine(absl::StrCat("waiting for ", tasks.size(), " tasks: ", SummarizeTasks(tasks)));
  }
  for (const TaskEvent& event : DiffTaskStates(before, after)) PrintLine(FormatTaskEvent(event));
}

// Prints task events until a shutdown signal (returns kExitOk) or the watch fails (kExitFailed).
// The first shutdown signal reaches `self` through a ShutdownSignalForwarder.
int LogTaskEvents(caf::scoped_actor& self, const CoordinatorActor& coordinator) {
  auto watch =
      SpawnJobWatch(self->system(), coordinator, "", caf::actor_cast<JobWatchListener>(self));
  proto::WatchJobStateResponse last;
  bool first = true;
  bool running = true;
  int code = kExitOk;
  self->receive_while(running)(
      [&](proto::WatchJobStateResponse& snapshot) {
        LogSnapshot(last, snapshot, first);
        first = false;
        last = std::move(snapshot);
      },
      [&](shutdown_atom, int signal) {
        PrintLine(absl::StrCat("muster leader shutting down (signal ", signal, ")"));
        running = false;
      },
      [&](watch_failed_atom, const caf::error& error) {
        code = ReportFailure(kCommand, ToStatus(error));
        running = false;
      });
  caf::anon_send_exit(watch, caf::exit_reason::user_shutdown);
  return code;
}

bool IsLoopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" ||
         absl::StartsWith(host, "127.");
}

int Serve(const CoordinatorOptions& options, const NodeOptions& node, std::string token) {
  NodeConfig config(node);
  caf::actor_system system{config};
  std::string host = absl::GetFlag(FLAGS_host);
  const bool with_token = !token.empty();
  const bool with_tls = node.tls.enabled();
  const char* where = host.empty() ? "every interface" : host.c_str();
  if (!IsLoopback(host) && !with_token && !with_tls) {
    std::fprintf(stderr,
                 "muster serve: WARNING: listening on %s without TLS or a job token: anyone who "
                 "can reach the port can read and delete keys and end the job. Give --tls-cert, "
                 "--tls-key, --tls-ca and/or --token-file (see docs/operations.md, Security)\n",
                 where);
  } else if (!IsLoopback(host) && !with_tls) {
    std::fprintf(stderr,
                 "muster serve: WARNING: listening on %s without TLS: the job token and every "
                 "key and value cross the network in clear text (see docs/operations.md, "
                 "Security)\n",
                 where);
  }
  LeaderEndpoint endpoint{.host = host,
                          .port = static_cast<uint16_t>(absl::GetFlag(FLAGS_port)),
                          .token = std::move(token)};
  std::optional<uint16_t> direct = *DirectPortFlag();
  endpoint.direct_calls = direct.has_value();
  endpoint.direct_port = direct.value_or(0);
  if (std::string http = absl::GetFlag(FLAGS_http); !http.empty()) {
    auto parsed = ParseHttpAddress(http);
    if (!parsed.ok()) return ReportUsageError(kCommand, parsed.status());
    endpoint.http = *std::move(parsed);
  }
  if (HaRequested()) {
    return ServeHa(system, options, std::move(endpoint),
                   Describe(options) + (with_tls ? ", mutual TLS" : "") +
                       (with_token ? ", job token required" : ""));
  }
  auto leader = Leader::Start(system, options, std::move(endpoint));
  if (!leader.ok()) {
    if (leader.status().code() != absl::StatusCode::kUnavailable) {
      return ReportFailure(kCommand, leader.status());
    }
    return ReportFailure(
        kCommand,
        absl::Status(leader.status().code(), absl::StrCat(leader.status().message(),
                                                          "; is another leader using the port?")));
  }
  std::string http = (*leader)->http_url();
  std::printf("muster leader ready at %s:%u incarnation=0x%016llx%s%s\n", host.c_str(),
              (*leader)->port(), static_cast<unsigned long long>((*leader)->incarnation()),
              http.empty() ? "" : " http=", http.c_str());
  PrintLine(Describe(options) + (with_tls ? ", mutual TLS" : "") +
            (with_token ? ", job token required" : ""));
  if ((*leader)->direct_port() != 0) {
    PrintLine(absl::StrCat("direct key-value calls on port ", (*leader)->direct_port()));
  }
  if (!(*leader)->recovery().empty()) PrintLine((*leader)->recovery());
  int code = kExitOk;
  {
    caf::scoped_actor self{system};
    // Lives until the leader is stopped: a second signal ends a shutdown that hangs.
    ShutdownSignalForwarder forwarder{caf::actor_cast<caf::actor>(self)};
    code = LogTaskEvents(self, (*leader)->coordinator());
    // Barrier actors answer every waiting call with Aborted as they stop.
    (*leader)->Stop();
  }
  return code;
}

}  // namespace

int RunServe(const std::vector<std::string>& argv) {
  ParsedCommand parsed;
  if (auto done = ParseOrExit(ServeSpec(), argv, &parsed)) return *done;
  auto options = ServeOptionsFromFlags();
  if (!options.ok()) return ReportUsageError(kCommand, options.status());
  auto node = NodeOptionsFromFlags();
  if (!node.ok()) return ReportUsageError(kCommand, node.status());
  auto token = TokenFromFlags();
  if (!token.ok()) return ReportUsageError(kCommand, token.status());
  // Before the actor system starts its threads: they inherit the blocked signals.
  BlockShutdownSignals();
  return Serve(*options, *node, *std::move(token));
}

}  // namespace muster::cli
