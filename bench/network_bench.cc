// Muster on hosts of the network test bed (tests/netbed: network namespaces, root only). Not a
// test: nothing passes or fails; prints Markdown tables.
//
// Where false failures begin: random loss (every host drops that share of what it sends) ×
// heartbeat timeout → tasks wrongly declared dead. Each cell runs a leader and --tasks tasks,
// each on its own host, for --seconds, and counts the tasks told of a failure (every one is
// false).
//   network_bench [--seconds 20] [--tasks 3] [--loss 0,2,5,10,20] [--timeouts 1,2,5]
//
// --compare: Muster against PyTorch's TCPStore (its server in the leader's host), side by side
// at each one-way delay: --hosts hosts of --per-host tasks each (one process per host:
// bench/netbed_host.cc, bench/tcpstore_host.py), every host reaching the leader through a relay
// that adds the delay each way. Bring-up (connect, then a barrier of all), the release of a
// second barrier of all, and kill → survivors told (one host's process killed).
//   network_bench --compare [--hosts 16] [--per-host 64] [--delays 0,1,10,50]
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>
#include <absl/strings/str_split.h>
#include <absl/time/clock.h>

#include "muster/tools/run/subprocess.h"
#include "tests/netbed/net_bed.h"

namespace {

using muster::Subprocess;
using muster::netbed::NetBed;

std::vector<int> Ints(const std::string& text) {
  std::vector<int> values;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int value = 0;
    if (absl::SimpleAtoi(part, &value)) values.push_back(value);
  }
  return values;
}

// The tasks (of `tasks`) told of a failure during `seconds` with `loss` % and a heartbeat
// timeout of `timeout_s`; -1 when the run could not be made.
int FalseFailures(NetBed& bed, int tasks, int loss, int timeout_s, int seconds) {
  const std::string leader_address = NetBed::Address(0) + ":7400";
  if (!bed.HealAll().ok()) return -1;
  auto leader =
      Subprocess::Start(bed.In(0, {MUSTER_CLI_BIN, "serve", absl::StrCat("--job=worker=", tasks),
                                   "--host=" + NetBed::Address(0), "--port=7400",
                                   absl::StrCat("--heartbeat-timeout=", timeout_s, "s")}));
  if (!leader.ok() || !(*leader)->WaitForLine("muster leader ready", absl::Seconds(20)).ok()) {
    return -1;
  }
  std::vector<std::unique_ptr<Subprocess>> workers;
  for (int task = 0; task < tasks; ++task) {
    auto worker = Subprocess::Start(
        bed.In(task + 1, {MUSTER_E2E_WORKER_BIN, "--leader=" + leader_address,
                          absl::StrCat("--task=", task), absl::StrCat("--tasks=", tasks),
                          "--scenario=wait_error", absl::StrCat("--wait_ms=", seconds * 1000)}));
    if (!worker.ok()) return -1;
    if (!(*worker)->WaitForLine("EVENT ready", absl::Seconds(30)).ok()) return -1;
    workers.push_back(*std::move(worker));
  }
  for (int host = 0; host <= tasks; ++host) {
    if (!bed.SetLoss(host, loss).ok()) return -1;
  }
  int failed = 0;
  for (auto& worker : workers) {
    (void)worker->Wait(absl::Seconds(seconds + 30));
    if (worker->output().find("EVENT error") != std::string::npos) ++failed;
  }
  return failed;
}

// The latest of each host's "<label> <unix us>" line, less `since_us`, in ms; -1 if one is
// missing.
double LatestAfter(std::vector<std::unique_ptr<Subprocess>>& hosts, const std::string& label,
                   int64_t since_us, absl::Duration bound) {
  int64_t latest = 0;
  for (auto& host : hosts) {
    if (host == nullptr) continue;
    auto line = host->WaitForLine(label + " ", bound);
    if (!line.ok()) return -1;
    int64_t us = 0;
    if (!absl::SimpleAtoi(line->substr(line->find(' ') + 1), &us)) return -1;
    latest = std::max(latest, us);
  }
  return (latest - since_us) / 1000.0;
}

int64_t NowUs() { return absl::ToUnixMicros(absl::Now()); }

bool Touch(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "w");
  return file != nullptr && std::fclose(file) == 0;
}

struct Phases {
  double bring_up_ms = -1, barrier_ms = -1, told_ms = -1;
};

// One system at one delay: `host_command(host, first_task)` is a host's process.
Phases RunPhases(NetBed& bed, int hosts, int delay_ms, int target_port,
                 const std::function<std::vector<std::string>(int, int)>& host_command) {
  Phases phases;
  std::vector<std::unique_ptr<Subprocess>> relays, procs;
  for (int host = 1; host <= hosts; ++host) {
    auto relay = Subprocess::Start(
        bed.In(host, NetBed::Relay("127.0.0.1:7500",
                                   absl::StrCat(NetBed::Address(0), ":", target_port), delay_ms)));
    if (!relay.ok() || !(*relay)->WaitForLine("relay ready", absl::Seconds(30)).ok()) return {};
    relays.push_back(*std::move(relay));
  }
  static int run = 0;
  const std::string go = absl::StrCat("/tmp/mnb_go_", ::getpid(), "_", run, "_1");
  const std::string go2 = absl::StrCat("/tmp/mnb_go_", ::getpid(), "_", run++, "_2");
  std::remove(go.c_str());
  std::remove(go2.c_str());
  for (int host = 1; host <= hosts; ++host) {
    std::vector<std::string> command = host_command(host, 0);
    command.insert(command.end(), {"--go", go, "--go2", go2});
    auto proc = Subprocess::Start(bed.In(host, command));
    if (!proc.ok()) return {};
    procs.push_back(*std::move(proc));
  }
  for (auto& proc : procs) {
    if (!proc->WaitForLine("ready", absl::Seconds(120)).ok()) return {};
  }
  const int64_t go_us = NowUs();
  if (!Touch(go)) return {};
  phases.bring_up_ms = LatestAfter(procs, "JOINED", go_us, absl::Seconds(120));
  const int64_t go2_us = NowUs();
  if (!Touch(go2)) return {};
  phases.barrier_ms = LatestAfter(procs, "RELEASED", go2_us, absl::Seconds(120));
  const int64_t kill_us = NowUs();
  procs.back()->Signal(SIGKILL);
  procs.back().reset();
  phases.told_ms = LatestAfter(procs, "TOLD", kill_us, absl::Seconds(15));
  std::remove(go.c_str());
  std::remove(go2.c_str());
  return phases;
}

std::string Ms(double ms, int delay_ms) {
  if (ms < 0) return "—";
  std::string text = absl::StrFormat("%.1f ms", ms);
  if (delay_ms > 0) absl::StrAppend(&text, absl::StrFormat(" (%.1f RTT)", ms / (2.0 * delay_ms)));
  return text;
}

int Compare(int hosts, int per_host, const std::vector<int>& delays) {
  auto bed = NetBed::Create(hosts + 1);
  if (!bed.ok()) {
    std::fprintf(stderr, "network_bench: %s\n", bed.status().ToString().c_str());
    return 1;
  }
  const int world = hosts * per_host;
  std::printf(
      "%d hosts × %d tasks (one process per host), each host reaching the leader "
      "through a relay adding the one-way delay; TCPStore's kill column: it tells "
      "nobody (a waiting client only sees its own timeout)\n\n"
      "| one-way delay | bring-up Muster | bring-up TCPStore | barrier Muster | "
      "barrier TCPStore | kill → told, Muster | TCPStore |\n|---|---|---|---|---|---|---|\n",
      hosts, per_host);
  for (int delay : delays) {
    Phases muster, tcpstore;
    {
      auto leader = Subprocess::Start(
          (*bed)->In(0, {MUSTER_CLI_BIN, "serve", absl::StrCat("--job=worker=", world),
                         "--host=" + NetBed::Address(0), "--port=7400"}));
      if (leader.ok() && (*leader)->WaitForLine("muster leader ready", absl::Seconds(20)).ok()) {
        muster = RunPhases(**bed, hosts, delay, 7400, [&](int host, int) {
          return std::vector<std::string>{MUSTER_NETBED_HOST_BIN, "--leader=127.0.0.1:7500",
                                          absl::StrCat("--first=", (host - 1) * per_host),
                                          absl::StrCat("--count=", per_host)};
        });
      }
    }
    {
      auto server = Subprocess::Start((*bed)->In(
          0, {"/usr/bin/python3", "-c",
              absl::StrCat("import time; from datetime import timedelta; import torch.distributed "
                           "as d; s = d.TCPStore('",
                           NetBed::Address(0), "', 29500, ", world + 1,
                           ", True, timeout=timedelta(seconds=120), wait_for_workers=False); "
                           "print('store ready', flush=True); time.sleep(3600)")}));
      if (server.ok() && (*server)->WaitForLine("store ready", absl::Seconds(60)).ok()) {
        tcpstore = RunPhases(**bed, hosts, delay, 29500, [&](int, int) {
          return std::vector<std::string>{
              "/usr/bin/python3", MUSTER_TCPSTORE_HOST, "--store=127.0.0.1:7500",
              absl::StrCat("--count=", per_host), absl::StrCat("--world=", world)};
        });
      }
    }
    std::printf("| %d ms | %s | %s | %s | %s | %s | %s |\n", delay,
                Ms(muster.bring_up_ms, delay).c_str(), Ms(tcpstore.bring_up_ms, delay).c_str(),
                Ms(muster.barrier_ms, delay).c_str(), Ms(tcpstore.barrier_ms, delay).c_str(),
                Ms(muster.told_ms, delay).c_str(),
                tcpstore.told_ms < 0 ? "not told" : Ms(tcpstore.told_ms, delay).c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int seconds = 20, tasks = 3, hosts = 16, per_host = 64;
  bool compare = false;
  std::vector<int> losses = {0, 2, 5, 10, 20}, timeouts = {1, 2, 5}, delays = {0, 1, 10, 50};
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--compare") compare = true;
  }
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--hosts") hosts = std::atoi(value.c_str());
    if (flag == "--per-host") per_host = std::atoi(value.c_str());
    if (flag == "--delays") delays = Ints(value);
    if (flag == "--seconds") seconds = std::atoi(value.c_str());
    if (flag == "--tasks") tasks = std::atoi(value.c_str());
    if (flag == "--loss") losses = Ints(value);
    if (flag == "--timeouts") timeouts = Ints(value);
  }
  if (std::string why = NetBed::Unavailable(); !why.empty()) {
    std::fprintf(stderr, "network_bench: %s\n", why.c_str());
    return 2;
  }
  if (compare) return Compare(hosts, per_host, delays);
  auto bed = NetBed::Create(tasks + 1);
  if (!bed.ok()) {
    std::fprintf(stderr, "network_bench: %s\n", bed.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "False failures: tasks told of a failure / tasks, %d s per cell, %d tasks each on "
      "its own host, loss on every host's sends\n\n| loss |",
      seconds, tasks);
  for (int timeout : timeouts) std::printf(" heartbeat %d s |", timeout);
  std::printf("\n|---|");
  for (size_t i = 0; i < timeouts.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (int loss : losses) {
    std::printf("| %d%% |", loss);
    std::fflush(stdout);
    for (int timeout : timeouts) {
      int failed = FalseFailures(**bed, tasks, loss, timeout, seconds);
      if (failed < 0) {
        std::printf(" (no run) |");
      } else {
        std::printf(" %d/%d |", failed, tasks);
      }
      std::fflush(stdout);
    }
    std::printf("\n");
  }
  return 0;
}
