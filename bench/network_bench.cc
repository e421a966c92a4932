// Where false failures begin: a table of random loss (every host drops that share of what it
// sends) × heartbeat timeout → tasks wrongly declared dead, on hosts of the network test bed
// (tests/netbed: network namespaces, root only). Each cell runs a leader and --tasks tasks,
// each on its own host, for --seconds, and counts the tasks that were told of a failure (there
// is none: every failure is false). Prints a Markdown table. Not a test: nothing passes or fails.
//
//   network_bench [--seconds 20] [--tasks 3] [--loss 0,2,5,10,20] [--timeouts 1,2,5]
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
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
  auto leader = Subprocess::Start(bed.In(
      0, {MUSTER_CLI_BIN, "serve", absl::StrCat("--job=worker=", tasks),
          "--host=" + NetBed::Address(0), "--port=7400",
          absl::StrCat("--heartbeat-timeout=", timeout_s, "s")}));
  if (!leader.ok() || !(*leader)->WaitForLine("muster leader ready", absl::Seconds(20)).ok()) {
    return -1;
  }
  std::vector<std::unique_ptr<Subprocess>> workers;
  for (int task = 0; task < tasks; ++task) {
    auto worker = Subprocess::Start(bed.In(
        task + 1, {MUSTER_E2E_WORKER_BIN, "--leader=" + leader_address,
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

}  // namespace

int main(int argc, char** argv) {
  int seconds = 20, tasks = 3;
  std::vector<int> losses = {0, 2, 5, 10, 20}, timeouts = {1, 2, 5};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--seconds") seconds = std::atoi(value.c_str());
    if (flag == "--tasks") tasks = std::atoi(value.c_str());
    if (flag == "--loss") losses = Ints(value);
    if (flag == "--timeouts") timeouts = Ints(value);
  }
  if (std::string why = NetBed::Unavailable(); !why.empty()) {
    std::fprintf(stderr, "network_bench: %s\n", why.c_str());
    return 2;
  }
  auto bed = NetBed::Create(tasks + 1);
  if (!bed.ok()) {
    std::fprintf(stderr, "network_bench: %s\n", bed.status().ToString().c_str());
    return 1;
  }
  std::printf("False failures: tasks told of a failure / tasks, %d s per cell, %d tasks each on "
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
