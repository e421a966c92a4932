// A leader for the multi-process tests: every service option as a flag, the same ready line as
// `muster serve` ("muster leader ready at HOST:PORT incarnation=0x..."), SIGTERM to stop.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_split.h>
#include <caf/actor_system.hpp>

#include "muster/net/leader/leader.h"
#include "muster/net/transport/node_config.h"

ABSL_FLAG(std::vector<std::string>, jobs, {"worker=1"}, "name=tasks, comma separated");
ABSL_FLAG(int, port, 0, "TCP port");
ABSL_FLAG(bool, direct_calls, true, "offer direct key-value calls (the ready line names the port)");
ABSL_FLAG(std::string, token, "", "the job token (empty: none)");
ABSL_FLAG(int64_t, heartbeat_timeout_ms, 10'000, "heartbeat timeout");
ABSL_FLAG(bool, register_barrier, false, "registration waits for every task");
ABSL_FLAG(int64_t, register_timeout_ms, 60'000, "register barrier timeout");
ABSL_FLAG(int64_t, shutdown_barrier_timeout_ms, 0, "shutdown barrier timeout (0: none)");
ABSL_FLAG(std::vector<std::string>, recoverable_jobs, {}, "recoverable jobs");
ABSL_FLAG(int64_t, stuck_after_ms, 0, "stuck rule: no step advance for this long (0: off)");
ABSL_FLAG(int64_t, max_step_lag, 0, "stuck rule: steps behind the median (0: off)");
ABSL_FLAG(std::string, state_dir, "", "state dir (empty: memory only)");
ABSL_FLAG(int64_t, connection_loss_grace_ms, 0,
          "how long a task whose connection dropped may take to connect again (0: none)");
ABSL_FLAG(int64_t, reconnect_window_ms, 0,
          "reconnect window after a restart (0: heartbeat timeout)");
ABSL_FLAG(int64_t, max_frame_bytes, muster::WireLimits{}.max_frame_bytes, "frame size limit");
ABSL_FLAG(int64_t, max_unfinished_frame_bytes,
          static_cast<int64_t>(muster::WireLimits{}.max_unfinished_frame_bytes),
          "budget of unfinished frame bytes over every connection");
ABSL_FLAG(int64_t, frame_progress_timeout_ms, muster::WireLimits{}.frame_progress_timeout_ms,
          "deadline of each chunk of a large payload");
ABSL_FLAG(int64_t, max_connections_per_host, muster::WireLimits{}.max_connections_per_host,
          "connections one peer address may hold");
ABSL_FLAG(int64_t, handshake_timeout_ms, muster::WireLimits{}.handshake_timeout_ms,
          "handshake deadline of accepted connections");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  muster::CoordinatorOptions options;
  auto& config = options.config;
  for (const std::string& spec : absl::GetFlag(FLAGS_jobs)) {
    std::pair<std::string, std::string> parts = absl::StrSplit(spec, '=');
    int tasks = 0;
    if (!absl::SimpleAtoi(parts.second, &tasks)) return 2;
    auto* job = config.add_coordinated_job_list();
    job->set_name(parts.first);
    job->set_num_tasks(tasks);
  }
  config.set_heartbeat_timeout_in_ms(absl::GetFlag(FLAGS_heartbeat_timeout_ms));
  config.set_cluster_register_with_barrier(absl::GetFlag(FLAGS_register_barrier));
  config.set_cluster_register_timeout_in_ms(absl::GetFlag(FLAGS_register_timeout_ms));
  config.set_shutdown_barrier_timeout_in_ms(absl::GetFlag(FLAGS_shutdown_barrier_timeout_ms));
  for (const auto& job : absl::GetFlag(FLAGS_recoverable_jobs)) config.add_recoverable_jobs(job);
  config.set_stuck_after_ms(absl::GetFlag(FLAGS_stuck_after_ms));
  config.set_max_step_lag(absl::GetFlag(FLAGS_max_step_lag));
  config.set_connection_loss_grace_period_in_ms(absl::GetFlag(FLAGS_connection_loss_grace_ms));
  options.state_dir = absl::GetFlag(FLAGS_state_dir);
  options.reconnect_window = std::chrono::milliseconds(absl::GetFlag(FLAGS_reconnect_window_ms));

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  muster::NodeOptions node;
  node.wire_limits.max_frame_bytes = static_cast<uint32_t>(absl::GetFlag(FLAGS_max_frame_bytes));
  node.wire_limits.handshake_timeout_ms = absl::GetFlag(FLAGS_handshake_timeout_ms);
  node.wire_limits.max_unfinished_frame_bytes =
      static_cast<uint64_t>(absl::GetFlag(FLAGS_max_unfinished_frame_bytes));
  node.wire_limits.frame_progress_timeout_ms = absl::GetFlag(FLAGS_frame_progress_timeout_ms);
  node.wire_limits.max_connections_per_host =
      static_cast<uint32_t>(absl::GetFlag(FLAGS_max_connections_per_host));
  muster::NodeConfig cfg(node);
  caf::actor_system system{cfg};
  auto leader = muster::Leader::Start(system, options,
                                      {.port = static_cast<uint16_t>(absl::GetFlag(FLAGS_port)),
                                       .token = absl::GetFlag(FLAGS_token),
                                       .direct_calls = absl::GetFlag(FLAGS_direct_calls)});
  if (!leader.ok()) {
    std::fprintf(stderr, "%s\n", leader.status().ToString().c_str());
    return 1;
  }
  if (!(*leader)->recovery().empty()) std::printf("%s\n", (*leader)->recovery().c_str());
  std::printf("muster leader ready at %s incarnation=0x%016llx direct=%u\n",
              (*leader)->address().c_str(),
              static_cast<unsigned long long>((*leader)->incarnation()),
              static_cast<unsigned>((*leader)->direct_port()));
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  return 0;  // ~Leader stops the coordinator
}
