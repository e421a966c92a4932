// Muster through the benchmark workloads: a leader process (SpawnCoordinator +
// PublishCoordinator, one job "worker" of --param tasks) and client processes whose actors send
// protobuf requests straight to the coordinator.
//
// Run:  ./build/bench/muster_bench --workload=seq --variant=tryget          (or insert)
//       ./build/bench/muster_bench --workload=barrier --param=1024          (4 processes)
//       ./build/bench/muster_bench --workload=seq --caf=scheduler.policy=stealing
// Prints CSV rows system,variant,workload,param,metric,value,unit (driver.h).
#include "muster/bench/muster_bench.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <absl/strings/numbers.h>
#include <absl/strings/str_split.h>
#include <caf/scoped_actor.hpp>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/actors/durability/state_store.h"
#include "muster/bench/harness.h"
#include "muster/messages/status/status_codec.h"
#include "muster/net/agent/session/leader_session_actor.h"
#include "muster/net/leader/auth/token_gate_actor.h"
#include "muster/net/leader/leader_endpoint.h"
#include "muster/net/transport/node_config.h"
#include "muster/net/transport/tls/job_certificates.h"

namespace muster::bench {

void ApplyCafOverrides(caf::actor_system_config& cfg, const std::string& overrides) {
  for (absl::string_view item : absl::StrSplit(overrides, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    int64_t number = 0;
    const std::string& value = kv.second;
    auto unit = [&](absl::string_view suffix) { return absl::EndsWith(value, suffix); };
    if (absl::SimpleAtoi(value, &number)) {
      cfg.set(kv.first, number);
    } else if (unit("us") || unit("ms") || unit("ns")) {
      int64_t count = std::strtoll(value.c_str(), nullptr, 10);
      int64_t scale = unit("ns") ? 1 : unit("us") ? 1000 : 1'000'000;
      cfg.set(kv.first, caf::timespan{count * scale});
    } else {
      cfg.set(kv.first, caf::atom_from_string(value));
    }
  }
}

CoordinatorActor ConnectToLeader(caf::actor_system& system, int port) {
  caf::scoped_actor self{system};
  LeaderSessionReply reply = OpenLeaderSession(
      self, {.connect = {.port = static_cast<uint16_t>(port), .timeout = std::chrono::seconds(30)}},
      caf::infinite);
  if (!reply.status.ok()) {
    std::fprintf(stderr, "muster_bench: %s\n", reply.status.ToString().c_str());
    std::_Exit(1);
  }
  return reply.leader;
}

int64_t ClockNs(caf::actor_clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

namespace {

void EmitSample() {
  Usage usage = SampleUsage();
  Emit("sample", "mono_ns=" + std::to_string(MonoNs()) + " cpu_ns=" + std::to_string(usage.cpu_ns) +
                     " rss_kib=" + std::to_string(usage.rss_kib) +
                     " heap_kib=" + std::to_string(usage.heap_kib));
}

CoordinatorOptions LeaderOptions(const Flags& flags) {
  CoordinatorOptions options;
  auto* job = options.config.add_coordinated_job_list();
  job->set_name("worker");
  job->set_num_tasks(static_cast<int32_t>(std::max<int64_t>(1, flags.Int("param", 1))));
  // Only the heartbeat workload heartbeats (its keepalive variant with connection keep-alives
  // only); the others must not time out meanwhile.
  bool beats = flags.Get("workload") == "heartbeat" && flags.Get("variant") != "keepalive";
  options.config.set_heartbeat_timeout_in_ms(
      flags.Int("heartbeat_timeout_ms", beats ? 10'000 : 3'600'000));
  options.config.set_cluster_register_with_barrier(flags.Int("register_barrier", 0) != 0);
  return options;
}

// The node's options: mutual TLS with DIR/NAME.pem, DIR/NAME.key and DIR/ca.pem when
// --tls_dir=DIR is given.
NodeOptions BenchNodeOptions(const Flags& flags, const std::string& name) {
  NodeOptions node;
  if (std::string dir = flags.Get("tls_dir", ""); !dir.empty()) {
    node.tls = {
        .cert = dir + "/" + name + ".pem", .key = dir + "/" + name + ".key", .ca = dir + "/ca.pem"};
  }
  return node;
}

// The leader: emits "ready port=", a CPU / RSS sample on SIGUSR1, and stops on SIGTERM.
int RunLeader(const Flags& flags) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGUSR1);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (std::string dir = flags.Get("tls_dir", "");
      !dir.empty() && !std::filesystem::exists(dir + "/ca.pem")) {
    if (absl::Status made = WriteJobCertificates(dir, {"leader", "worker"}); !made.ok()) {
      std::fprintf(stderr, "muster_bench leader: %s\n", made.ToString().c_str());
      std::_Exit(1);
    }
  }
  NodeConfig cfg(BenchNodeOptions(flags, "leader"));
  ApplyCafOverrides(cfg, flags.Get("caf"));
  caf::actor_system system{cfg};
  if (flags.Get("workload") == "heartbeat") {
    Usage usage = SampleUsage();
    Emit("baseline", "rss_kib=" + std::to_string(usage.rss_kib) +
                         " heap_kib=" + std::to_string(usage.heap_kib));
  }
  if (IsFloorVariant(flags.Get("variant"))) {
    if (int code = RunFloorServer(system, flags.Get("variant"), flags.Get("workload")); code != 0) {
      std::_Exit(code);
    }
    for (int received = 0; sigwait(&signals, &received) == 0 && received != SIGTERM;) {
      EmitSample();
    }
    std::_Exit(0);
  }
  CoordinatorOptions options = LeaderOptions(flags);
  if (std::string dir = flags.Get("state_dir"); !dir.empty()) {  // a durable leader
    auto store = StateStore::Open(dir);
    absl::StatusOr<proto::RecoveredState> recovered =
        store.ok() ? (*store)->Load() : absl::StatusOr<proto::RecoveredState>(store.status());
    if (!recovered.ok()) {
      std::fprintf(stderr, "muster_bench leader: %s\n", recovered.status().ToString().c_str());
      std::_Exit(1);
    }
    if (!recovered->fresh()) options.incarnation = recovered->leader().incarnation();
    options.recovered = std::make_shared<const proto::RecoveredState>(*std::move(recovered));
    options.state_writer = SpawnStateWriter(system, *std::move(store));
    options.reconnect_window = std::chrono::seconds(30);
  }
  CoordinatorActor coordinator = SpawnCoordinator(system, std::move(options));
  if (std::string token = flags.Get("token", ""); !token.empty()) {
    coordinator = SpawnTokenGate(system, coordinator, {.token = std::move(token)});
  }
  auto port =
      PublishCoordinator(system, coordinator, static_cast<uint16_t>(flags.Int("listen_port", 0)));
  if (!port.ok()) {
    std::fprintf(stderr, "muster_bench leader: %s\n", port.status().ToString().c_str());
    std::_Exit(1);
  }
  Emit("ready", "port=" + std::to_string(*port));
  for (int received = 0; sigwait(&signals, &received) == 0 && received != SIGTERM;) EmitSample();
  std::_Exit(0);
}

int RunClient(const Flags& flags) {
  ClientArgs args = ParseClientArgs(flags);
  NodeConfig cfg(BenchNodeOptions(flags, "worker"));
  ApplyCafOverrides(cfg, flags.Get("caf"));
  if (args.workload == "heartbeat" && args.variant == "keepalive") {
    // One CAF keep-alive frame a second for each task of this process, as if each task were a
    // process of its own.
    cfg.set("middleman.heartbeat-interval",
            caf::timespan{1'000'000'000 / std::max<int64_t>(1, args.Count())});
  }
  caf::actor_system system{cfg};
  int code = 2;
  if (args.workload == "seq") {
    code = RunSeqClient(system, args, flags.Get("client") == "blocking");
  } else if (args.workload == "conc") {
    code = RunConcClient(system, args);
  } else if (args.workload == "barrier") {
    code = RunBarrierClient(system, args);
  } else if (args.workload == "bringup") {
    code = RunBringupClient(system, args);
  } else if (args.workload == "heartbeat") {
    code = RunHeartbeatClient(system, args);
  } else if (args.workload == "failure") {
    code = RunFailureClient(system, args);
  } else if (args.workload == "resume") {
    code = RunResumeClient(system, args);
  } else {
    std::fprintf(stderr, "muster_bench: unknown workload %s\n", args.workload.c_str());
  }
  std::fflush(stdout);
  std::_Exit(code);  // skips CAF's shutdown: remote peers may still reference local actors
}

int RunChild(const Flags& flags) {
  BecomeChild(flags.Int("deadline_s", 120));
  return flags.Get("role") == "server" ? RunLeader(flags) : RunClient(flags);
}

}  // namespace
}  // namespace muster::bench

int main(int argc, char** argv) {
  muster::bench::Flags flags(argc, argv);
  if (flags.Has("role")) return muster::bench::RunChild(flags);  // one process, by hand
  return muster::bench::RunDriver(flags, "muster", &muster::bench::RunChild);
}
