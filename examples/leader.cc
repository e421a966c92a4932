// A standalone Muster leader: spawns the coordinator and publishes it on a TCP port.
//
// Run:   ./build/examples/leader --jobs=worker=4 --port=7400
// Then:  ./build/examples/worker --leader=127.0.0.1:7400 --job=worker --task=0   (and 1, 2, 3)
//
// Prints one line "muster leader ready at HOST:PORT incarnation=0x..." when it accepts
// connections, and runs until SIGINT or SIGTERM.
#include <cstdio>
#include <string>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>

#include "muster/actors/coordinator_actor.h"
#include "muster/messages/incarnation.h"
#include "muster/net/job_spec.h"
#include "muster/net/leader_endpoint.h"
#include "muster/net/node_config.h"
#include "muster/net/shutdown_signals.h"

ABSL_FLAG(std::vector<std::string>, jobs, {"worker=1"}, "Jobs as name=tasks, comma separated");
ABSL_FLAG(std::string, host, "127.0.0.1", "Address to listen on (0.0.0.0: every interface)");
ABSL_FLAG(int, port, 7400, "TCP port (0: any free port)");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  muster::CoordinatorOptions options;
  options.incarnation = muster::NewIncarnation();
  absl::Status jobs = muster::AddJobSpecs(absl::GetFlag(FLAGS_jobs), &options.config);
  if (!jobs.ok()) {
    std::fprintf(stderr, "leader: --jobs: %s\n", std::string(jobs.message()).c_str());
    return 2;
  }
  // Before CAF starts its threads, so that the signals wait for WaitForShutdownSignal().
  muster::BlockShutdownSignals();

  muster::NodeConfig cfg;
  caf::actor_system system{cfg};
  auto coordinator = muster::SpawnCoordinator(system, options);
  const std::string host = absl::GetFlag(FLAGS_host);
  auto port = muster::PublishCoordinator(system, coordinator, absl::GetFlag(FLAGS_port), host);
  if (!port.ok()) {
    std::fprintf(stderr, "leader: %s\n", std::string(port.status().message()).c_str());
    caf::anon_send_exit(coordinator, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::printf("muster leader ready at %s:%u incarnation=0x%016llx\n", host.c_str(), *port,
              static_cast<unsigned long long>(options.incarnation));
  std::fflush(stdout);
  int received = muster::WaitForShutdownSignal();
  std::printf("muster leader shutting down (signal %d)\n", received);
  system.middleman().unpublish(coordinator, *port);
  caf::anon_send_exit(coordinator, caf::exit_reason::user_shutdown);
  return 0;
}
