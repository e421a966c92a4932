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

#include "muster/net/leader/job_spec.h"
#include "muster/net/leader/leader.h"
#include "muster/net/process/shutdown_signals.h"
#include "muster/net/transport/node_config.h"

ABSL_FLAG(std::vector<std::string>, jobs, {"worker=1"}, "Jobs as name=tasks, comma separated");
ABSL_FLAG(std::string, host, "127.0.0.1", "Address to listen on (0.0.0.0: every interface)");
ABSL_FLAG(int, port, 7400, "TCP port (0: any free port)");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  muster::CoordinatorOptions options;  // incarnation 0: Leader::Start draws a random one
  absl::Status jobs = muster::AddJobSpecs(absl::GetFlag(FLAGS_jobs), &options.config);
  if (!jobs.ok()) {
    std::fprintf(stderr, "leader: --jobs: %s\n", std::string(jobs.message()).c_str());
    return 2;
  }
  // Before CAF starts its threads, so that the signals wait for WaitForShutdownSignal().
  muster::BlockShutdownSignals();

  muster::NodeConfig cfg;
  caf::actor_system system{cfg};
  auto leader = muster::Leader::Start(system, options,
                                      {.host = absl::GetFlag(FLAGS_host),
                                       .port = static_cast<uint16_t>(absl::GetFlag(FLAGS_port))});
  if (!leader.ok()) {
    std::fprintf(stderr, "leader: %s\n", std::string(leader.status().message()).c_str());
    return 1;
  }
  std::printf("muster leader ready at %s:%u incarnation=0x%016llx\n", (*leader)->host().c_str(),
              (*leader)->port(), static_cast<unsigned long long>((*leader)->incarnation()));
  std::fflush(stdout);
  int received = muster::WaitForShutdownSignal();
  std::printf("muster leader shutting down (signal %d)\n", received);
  (*leader)->Stop();  // waiting calls are answered; the destructor would do the same
  return 0;
}
