// A standalone Muster leader: spawns the coordinator and publishes it on a TCP port.
//
// Run:   ./build/examples/leader --jobs=worker=4 --port=7400
// Then:  ./build/examples/worker --leader=127.0.0.1:7400 --job=worker --task=0   (and 1, 2, 3)
//
// Prints one line "muster leader ready at HOST:PORT incarnation=0x..." when it accepts
// connections, and runs until SIGINT or SIGTERM.
//
// One of an HA job's leaders (docs/operations.md, "High availability"): the same on two or three
// hosts, each with its own --port, and the job's state in etcd:
//        ./build/examples/leader --jobs=worker=4 --ha_etcd=etcd1:2379,etcd2:2379 --ha_name=train-7
// It prints each change of role ("active: serving", "standby: the active leader is ...").
#include <cstdio>
#include <string>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <caf/actor_system.hpp>

#include "muster/net/ha/ha_leader.h"
#include "muster/net/leader/job_spec.h"
#include "muster/net/leader/leader.h"
#include "muster/net/process/shutdown_signals.h"
#include "muster/net/transport/node_config.h"

ABSL_FLAG(std::vector<std::string>, jobs, {"worker=1"}, "Jobs as name=tasks, comma separated");
ABSL_FLAG(std::string, host, "127.0.0.1", "Address to listen on (0.0.0.0: every interface)");
ABSL_FLAG(int, port, 7400, "TCP port (0: any free port)");
ABSL_FLAG(std::string, ha_etcd, "",
          "etcd's members, HOST:PORT,HOST:PORT: one of an HA job's leaders");
ABSL_FLAG(std::string, ha_name, "", "With --ha_etcd: the HA job's name, the same on every leader");

namespace {

// An HA job's leader: campaigns on etcd, serves while it holds the leader key, stands by
// otherwise, until a shutdown signal.
int RunHaLeader(caf::actor_system& system, const muster::CoordinatorOptions& options) {
  muster::HaOptions ha{.etcd = absl::GetFlag(FLAGS_ha_etcd), .name = absl::GetFlag(FLAGS_ha_name)};
  ha.on_role = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  auto leader = muster::HaLeader::Start(
      system, options,
      {.host = absl::GetFlag(FLAGS_host), .port = static_cast<uint16_t>(absl::GetFlag(FLAGS_port))},
      std::move(ha));
  if (!leader.ok()) {  // Unavailable: etcd does not answer; FailedPrecondition: another config
    std::fprintf(stderr, "leader: %s\n", std::string(leader.status().message()).c_str());
    return 1;
  }
  std::printf("muster leader ready at %s ha=%s\n", (*leader)->address().c_str(),
              (*leader)->name().c_str());
  std::fflush(stdout);
  int received = muster::WaitForShutdownSignal();
  std::printf("muster leader shutting down (signal %d)\n", received);
  (*leader)->Stop();  // resigns: a standby takes over at once
  return 0;
}

}  // namespace

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
  if (!absl::GetFlag(FLAGS_ha_etcd).empty()) return RunHaLeader(system, options);
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
