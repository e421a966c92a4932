// A leader for the multi-process tests: every service option as a flag, the same ready line as
// `muster serve` ("muster leader ready at HOST:PORT incarnation=0x..."), SIGTERM to stop.
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_split.h>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>

#include "muster/actors/coordinator_actor.h"
#include "muster/messages/incarnation.h"
#include "muster/net/leader_endpoint.h"
#include "muster/net/node_config.h"

ABSL_FLAG(std::vector<std::string>, jobs, {"worker=1"}, "name=tasks, comma separated");
ABSL_FLAG(int, port, 0, "TCP port");
ABSL_FLAG(int64_t, heartbeat_timeout_ms, 10'000, "heartbeat timeout");
ABSL_FLAG(bool, register_barrier, false, "registration waits for every task");
ABSL_FLAG(int64_t, register_timeout_ms, 60'000, "register barrier timeout");
ABSL_FLAG(int64_t, shutdown_barrier_timeout_ms, 0, "shutdown barrier timeout (0: none)");
ABSL_FLAG(std::vector<std::string>, recoverable_jobs, {}, "recoverable jobs");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  muster::CoordinatorOptions options;
  options.incarnation = muster::NewIncarnation();
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

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  muster::NodeConfig cfg;
  caf::actor_system system{cfg};
  auto coordinator = muster::SpawnCoordinator(system, options);
  auto port = muster::PublishCoordinator(system, coordinator, absl::GetFlag(FLAGS_port));
  if (!port.ok()) {
    std::fprintf(stderr, "%s\n", port.status().ToString().c_str());
    caf::anon_send_exit(coordinator, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::printf("muster leader ready at 127.0.0.1:%u incarnation=0x%016llx\n", *port,
              static_cast<unsigned long long>(options.incarnation));
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  system.middleman().unpublish(coordinator, *port);
  caf::anon_send_exit(coordinator, caf::exit_reason::user_shutdown);
  return 0;
}
