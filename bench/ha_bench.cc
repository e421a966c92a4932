// Standby leaders on etcd, measured side by side in one run (docs/performance.md, "High
// availability"), against a 3-member etcd cluster this program starts on free loopback ports:
//
//   inserts  KV inserts per second through muster::Agent at 1 and 64 clients, each client
//            inserting its own keys for --duration: a leader keeping its state in memory, in a
//            state dir (LevelDB), and in etcd (fenced transactions, over gRPC as `muster serve`
//            writes them, and through etcd's JSON gateway as a Python HA leader does); and
//            etcd's own floor, the same number of clients putting one key per transaction
//            straight to etcd; and (--secure) a cluster of its own that requires TLS, a client
//            certificate and a user, over gRPC.
//   failover kill -9 of the leader with --tasks agents connected (each with
//            leader_reconnect_timeout): until a standby serves, and until every agent has had an
//            answer to a call made right after the kill; against a `muster serve --state-dir`
//            killed and started again on the same host and port.
//
// Usage: ha_bench --muster_bin=build/tools/muster [--duration=3s] [--tasks=64,1024] [--reps=3]
//                 [--secure=false]
// Not a test: it prints tables, and asserts nothing about time.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <absl/synchronization/notification.h>
#include <absl/time/clock.h>
#include <caf/actor_system.hpp>

#include "muster/bench/stats.h"
#include "muster/messages/requests/kv_requests.h"
#include "muster/net/agent/agent.h"
#include "muster/net/ha/etcd/etcd_grpc_member.h"
#include "muster/net/ha/etcd_election.h"
#include "muster/net/ha/etcd_state_store.h"
#include "muster/net/leader/leader.h"
#include "muster/net/transport/node_config.h"
#include "muster/tools/run/subprocess.h"
#include "tests/net/ha/etcd_cluster.h"

ABSL_FLAG(bool, secure, true,
          "also measure inserts through an etcd cluster that requires TLS, a client certificate "
          "and a user");
ABSL_FLAG(std::string, muster_bin, "tools/muster", "the muster command (for the failover runs)");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(3), "how long each insert run lasts");
ABSL_FLAG(std::vector<std::string>, tasks, std::vector<std::string>({"64", "1024"}),
          "task counts of the failover runs");
ABSL_FLAG(int, reps, 3, "repetitions of each row");

namespace muster::bench {
namespace {

using ::muster::testing::EtcdCluster;
namespace fs = std::filesystem;

std::string TempDir(const std::string& what) {
  std::string pattern = (fs::temp_directory_path() / ("muster-ha-bench-" + what + "-XXXXXX"));
  if (mkdtemp(pattern.data()) == nullptr) std::abort();
  return pattern;
}

// Runs `body(i)` on `clients` threads for `duration`; returns the calls per second they made.
double PerSecond(int clients, absl::Duration duration,
                 const std::function<bool(int, int64_t)>& body) {
  std::atomic<int64_t> done{0};
  std::atomic<bool> failed{false};
  const absl::Time end = absl::Now() + duration;
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      for (int64_t n = 0; absl::Now() < end; ++n) {
        if (!body(c, n)) {
          failed = true;
          return;
        }
        ++done;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  if (failed) return -1;
  return static_cast<double>(done) / absl::ToDoubleSeconds(absl::Now() - start);
}

// etcd's own floor: each client puts its keys straight to etcd, one per transaction.
double EtcdFloor(const std::shared_ptr<EtcdClient>& etcd, int clients, absl::Duration duration) {
  return PerSecond(clients, duration, [&](int c, int64_t n) {
    etcdserverpb::TxnRequest txn;
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(absl::StrCat("floor/", c, "/", n));
    put->set_value("value");
    return etcd->Txn(txn, absl::Seconds(10)).ok();
  });
}

// Inserts through `clients` agents in a worker system of this process, to `leader`.
double AgentInserts(const std::string& leader, int clients, absl::Duration duration,
                    const std::string& tag) {
  NodeConfig config{WorkerNodeOptions()};
  caf::actor_system system{config};
  std::vector<std::unique_ptr<Agent>> agents;
  for (int c = 0; c < clients; ++c) {
    AgentOptions options{.leader = leader, .task_id = c};
    options.shutdown_on_destruction = false;
    auto agent = Agent::Create(system, options, [](const absl::Status&) {});
    if (!agent.ok()) return -1;
    agents.push_back(*std::move(agent));
  }
  double rate = PerSecond(clients, duration, [&](int c, int64_t n) {
    return agents[c]->InsertKeyValue(absl::StrCat("bench/", tag, "/", c, "/", n), "value").ok();
  });
  agents.clear();
  return rate;
}

CoordinatorOptions JobOf(int tasks) {
  CoordinatorOptions options;
  auto* job = options.config.add_coordinated_job_list();
  job->set_name("worker");
  job->set_num_tasks(tasks);
  return options;
}

// One insert run against a leader in this process with `store` (null: memory).
double LeaderInserts(std::shared_ptr<StateStore> store, int clients, absl::Duration duration,
                     const std::string& tag) {
  NodeConfig config;
  caf::actor_system system{config};
  auto leader = Leader::Start(system, JobOf(64), {}, std::move(store));
  if (!leader.ok()) {
    std::fprintf(stderr, "ha_bench: %s\n", leader.status().ToString().c_str());
    return -1;
  }
  double rate = AgentInserts((*leader)->address(), clients, duration, tag);
  (*leader)->Stop();
  return rate;
}

void PrintRow(const std::string& what, std::vector<double> samples, const std::string& unit) {
  Summary s = Summarize(samples);
  std::printf("| %s | %.1f %s | %.1f | %.1f |\n", what.c_str(), s.median, unit.c_str(), s.min,
              s.max);
  std::fflush(stdout);
}

// The inserts of a leader with its state in etcd, job `name`, reached through `etcd`.
double EtcdInserts(const std::shared_ptr<EtcdClient>& etcd, const std::string& name, int clients,
                   absl::Duration duration, const std::string& tag) {
  EtcdElection election(etcd, name, "bench:1", 10);
  auto claim = election.Campaign();
  double rate = -1;
  if (claim.ok() && election.won(*claim)) {
    rate =
        LeaderInserts(EtcdStateStore::Open(etcd, {.name = name, .fence = election.Fence(*claim)}),
                      clients, duration, tag);
  }
  election.Resign();
  return rate;
}

// `secure`, when set, reaches another cluster that serves clients over TLS only, with a client
// certificate and a user (tokens), over gRPC.
void Inserts(const std::shared_ptr<EtcdClient>& etcd,
             const std::shared_ptr<EtcdClient>& through_gateway,
             const std::shared_ptr<EtcdClient>& secure) {
  const absl::Duration duration = absl::GetFlag(FLAGS_duration);
  const int reps = absl::GetFlag(FLAGS_reps);
  std::printf("\n### KV inserts per second (median of %d runs of %s)\n\n", reps,
              absl::FormatDuration(duration).c_str());
  std::printf("| clients, state | median | min | max |\n|---|---|---|---|\n");
  int run = 0;
  for (int clients : {1, 64}) {
    std::vector<double> memory, leveldb, in_etcd, in_etcd_gateway, in_secure_etcd, floor;
    for (int rep = 0; rep < reps; ++rep) {
      const std::string tag = absl::StrCat("r", run++);
      memory.push_back(LeaderInserts(nullptr, clients, duration, tag));
      std::string dir = TempDir("leveldb");
      auto dir_store = StateStore::Open(dir);
      leveldb.push_back(dir_store.ok() ? LeaderInserts(*dir_store, clients, duration, tag) : -1);
      fs::remove_all(dir);
      const std::string name = absl::StrCat("bench-", getpid(), "-", tag);
      in_etcd.push_back(EtcdInserts(etcd, name, clients, duration, tag));
      in_etcd_gateway.push_back(
          EtcdInserts(through_gateway, name + "-gateway", clients, duration, tag));
      if (secure) {
        in_secure_etcd.push_back(EtcdInserts(secure, name + "-secure", clients, duration, tag));
      }
      floor.push_back(EtcdFloor(etcd, clients, duration));
    }
    PrintRow(absl::StrCat(clients, ", memory"), memory, "/s");
    PrintRow(absl::StrCat(clients, ", state dir (LevelDB)"), leveldb, "/s");
    PrintRow(absl::StrCat(clients, ", etcd (fenced transactions, gRPC)"), in_etcd, "/s");
    PrintRow(absl::StrCat(clients, ", etcd (fenced transactions, JSON gateway)"), in_etcd_gateway,
             "/s");
    if (secure) {
      PrintRow(absl::StrCat(clients, ", etcd over TLS with a client certificate and a user (gRPC)"),
               in_secure_etcd, "/s");
    }
    PrintRow(absl::StrCat(clients, ", etcd's own put, one key per transaction"), floor, "/s");
    const double ratio_memory = Summarize(in_etcd).median / Summarize(memory).median;
    const double ratio_floor = Summarize(in_etcd).median / Summarize(floor).median;
    std::printf("| %d: etcd state / memory = %.2fx, / etcd's floor = %.2fx | | | |\n", clients,
                ratio_memory, ratio_floor);
  }
}

// A `muster serve` process with `flags`; its port from the ready line.
struct Serve {
  std::unique_ptr<Subprocess> process;
  int port = 0;
};

Serve StartServe(std::vector<std::string> flags) {
  flags.insert(flags.begin(), {absl::GetFlag(FLAGS_muster_bin), "serve"});
  Serve serve;
  auto process = Subprocess::Start(flags);
  if (!process.ok()) return serve;
  serve.process = *std::move(process);
  auto ready = serve.process->WaitForLine("muster leader ready at 127.0.0.1:", absl::Seconds(30));
  if (!ready.ok()) {
    std::fprintf(stderr, "ha_bench: %s\n%s\n", ready.status().ToString().c_str(),
                 serve.process->output().c_str());
    return serve;
  }
  std::string rest = ready->substr(ready->find("127.0.0.1:") + 10);
  (void)absl::SimpleAtoi(rest.substr(0, rest.find(' ')), &serve.port);
  return serve;
}

// `tasks` agents connected to `leader`; `kill` kills the leader, then every agent makes one
// call (it waits in the agent while the agent finds a leader again), then `serving` waits until
// what replaces the leader serves. Returns the seconds from the kill to that, and to the last
// answer.
std::pair<double, double> Failover(const std::string& leader, int tasks,
                                   const std::function<void()>& kill,
                                   const std::function<void()>& serving) {
  NodeConfig config{WorkerNodeOptions()};
  caf::actor_system system{config};
  std::vector<std::unique_ptr<Agent>> agents;
  for (int t = 0; t < tasks; ++t) {
    AgentOptions options{.leader = leader,
                         .task_id = t,
                         .heartbeat_timeout = absl::Seconds(10),
                         .register_timeout = absl::Seconds(60)};
    options.leader_reconnect_timeout = absl::Seconds(60);
    options.shutdown_on_destruction = false;
    auto agent = Agent::Create(system, options, [](const absl::Status&) {});
    if (!agent.ok() || !(*agent)->Connect().ok()) return {-1, -1};
    agents.push_back(*std::move(agent));
  }
  const absl::Time killed = absl::Now();
  kill();
  std::atomic<int> left{tasks};
  absl::Notification answered;
  std::atomic<int64_t> last_ns{0};
  for (auto& agent : agents) {
    agent->CallAsync<proto::TryGetKeyValueResponse>(
        [&](absl::StatusOr<proto::TryGetKeyValueResponse>) {
          if (--left == 0) {
            last_ns = absl::GetCurrentTimeNanos();
            answered.Notify();
          }
        },
        requests::TryGetKeyValue("failover/absent"));
  }
  serving();
  const double served = absl::ToDoubleSeconds(absl::Now() - killed);
  if (!answered.WaitForNotificationWithTimeout(absl::Seconds(120))) return {served, -1};
  const double back = absl::ToDoubleSeconds(absl::FromUnixNanos(last_ns) - killed);
  agents.clear();
  return {served, back};
}

void Failovers(EtcdCluster& cluster) {
  const int reps = absl::GetFlag(FLAGS_reps);
  std::printf(
      "\n### Failover: kill -9 of the leader until a leader serves, and until every task "
      "is back (median of %d)\n\n",
      reps);
  std::printf(
      "| tasks, leader | serving again | every task answered | min | max |\n"
      "|---|---|---|---|---|\n");
  int run = 0;
  for (const std::string& text : absl::GetFlag(FLAGS_tasks)) {
    int tasks = 0;
    if (!absl::SimpleAtoi(text, &tasks)) continue;
    const std::string job = absl::StrCat("--job=worker=", tasks);
    std::vector<double> dir_serving, dir_back, ha_serving, ha_back;
    for (int rep = 0; rep < reps; ++rep) {
      // A state dir: the leader killed and started again on the same host and port.
      std::string dir = TempDir("restart");
      std::vector<std::string> flags = {"--port=0", job, "--state-dir=" + dir,
                                        "--reconnect-window=30s", "--heartbeat-timeout=10s"};
      Serve restart = StartServe(flags);
      auto [serving, back] = Failover(
          absl::StrCat("127.0.0.1:", restart.port), tasks,
          [&] {
            restart.process->Signal(SIGKILL);
            (void)restart.process->Wait(absl::Seconds(10));
          },
          [&] {
            flags[0] = absl::StrCat("--port=", restart.port);
            restart = StartServe(flags);
          });
      dir_serving.push_back(serving);
      dir_back.push_back(back);
      restart.process.reset();
      fs::remove_all(dir);
      // Two leaders on etcd: the active one killed, the standby takes over.
      std::vector<std::string> ha = {"--port=0",
                                     job,
                                     "--reconnect-window=30s",
                                     "--heartbeat-timeout=10s",
                                     "--ha-lease-ttl=2s",
                                     "--ha-etcd=" + cluster.endpoints(),
                                     absl::StrCat("--ha-name=failover-", getpid(), "-", run++)};
      Serve first = StartServe(ha);
      if (!first.process->WaitForLine("active: serving", absl::Seconds(30)).ok()) continue;
      Serve second = StartServe(ha);
      const std::string both = absl::StrCat("127.0.0.1:", first.port, ",127.0.0.1:", second.port);
      auto [ha_serve, ha_all] = Failover(
          both, tasks,
          [&] {
            first.process->Signal(SIGKILL);
            (void)first.process->Wait(absl::Seconds(10));
          },
          [&] { (void)second.process->WaitForLine("active: serving", absl::Seconds(60)); });
      ha_serving.push_back(ha_serve);
      ha_back.push_back(ha_all);
    }
    auto row = [&](const std::string& what, std::vector<double> serving, std::vector<double> back) {
      Summary b = Summarize(back);
      std::printf("| %d, %s | %.2f s | %.2f s | %.2f | %.2f |\n", tasks, what.c_str(),
                  Summarize(serving).median, b.median, b.min, b.max);
      std::fflush(stdout);
    };
    row("state dir, restarted on its host", dir_serving, dir_back);
    row("etcd, standby takes over (lease TTL 2 s)", ha_serving, ha_back);
  }
}

}  // namespace
}  // namespace muster::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  auto cluster = muster::testing::EtcdCluster::Start();
  if (!cluster.ok()) {
    std::fprintf(stderr, "ha_bench: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  auto endpoints = muster::ParseEtcdEndpoints((*cluster)->endpoints());
  auto etcd =
      muster::EtcdClient::Connect({.endpoints = *endpoints, .member = muster::NewEtcdGrpcMember});
  auto through_gateway = muster::EtcdClient::Connect({.endpoints = *endpoints});
  if (!etcd.ok() || !through_gateway.ok()) return 1;
  // The same over TLS with a client certificate and a user, on a cluster of its own.
  std::unique_ptr<muster::testing::EtcdCluster> secure_cluster;
  std::shared_ptr<muster::EtcdClient> secure;
  if (absl::GetFlag(FLAGS_secure)) {
    auto started = muster::testing::EtcdCluster::StartSecure(3, /*user=*/true);
    if (!started.ok()) {
      std::fprintf(stderr, "ha_bench: %s\n", started.status().ToString().c_str());
      return 1;
    }
    secure_cluster = *std::move(started);
    auto client = secure_cluster->Client();
    if (!client.ok()) return 1;
    secure = *std::move(client);
  }
  std::printf("## ha_bench: etcd 3.4, 3 members on this host (fsync on), 2 cores\n");
  muster::bench::Inserts(*etcd, *through_gateway, secure);
  muster::bench::Failovers(**cluster);
  return 0;
}
