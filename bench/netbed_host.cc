// One host's tasks for bench/network_bench.cc --compare: --count Muster agents in one process
// (tasks --first.. of job worker, sharing a heartbeat batcher and a barrier combiner). Each
// phase starts when its file appears (the bench writes it with the time it did):
//   --go FILE:   connect every task (in parallel), then meet at barrier "joined";
//                prints "JOINED <unix us>" when every task here has passed it;
//   --go2 FILE:  meet at barrier "release"; prints "RELEASED <unix us>";
// then waits; "TOLD <unix us>" when the first task here learns of another's failure.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/synchronization/notification.h>
#include <absl/time/clock.h>
#include <caf/actor_system.hpp>

#include "muster/net/agent/agent.h"
#include "muster/net/agent/per_process/barrier_combiner_actor.h"
#include "muster/net/agent/per_process/heartbeat_batcher_actor.h"
#include "muster/net/transport/node_config.h"

ABSL_FLAG(std::string, leader, "", "leader HOST:PORT");
ABSL_FLAG(int, first, 0, "first task id");
ABSL_FLAG(int, count, 64, "tasks in this process");
ABSL_FLAG(std::string, go, "", "start connecting when this file exists");
ABSL_FLAG(std::string, go2, "", "start the release barrier when this file exists");
ABSL_FLAG(int, wait_s, 60, "how long to wait for the phases and the failure");

namespace {

int64_t NowUs() { return absl::ToUnixMicros(absl::Now()); }

bool WaitForFile(const std::string& path, absl::Duration bound) {
  const absl::Time end = absl::Now() + bound;
  while (::access(path.c_str(), F_OK) != 0) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Microseconds(200));
  }
  return true;
}

// Every agent at `barrier`, at once; true when all passed.
bool Barrier(std::vector<std::unique_ptr<muster::Agent>>& agents, const std::string& barrier) {
  std::atomic<int> left{static_cast<int>(agents.size())};
  std::atomic<bool> ok{true};
  absl::Notification done;
  for (auto& agent : agents) {
    agent->WaitAtBarrierAsync(barrier, absl::Seconds(120), {}, [&](const absl::Status& s) {
      if (!s.ok()) ok = false;
      if (--left == 0) done.Notify();
    });
  }
  done.WaitForNotification();
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  muster::NodeConfig config(muster::WorkerNodeOptions(absl::Seconds(10)));
  caf::actor_system system{config};
  auto batcher = muster::SpawnHeartbeatBatcher(system);
  auto combiner = muster::SpawnBarrierCombiner(system);
  const int first = absl::GetFlag(FLAGS_first), count = absl::GetFlag(FLAGS_count);
  std::atomic<int64_t> told{0};
  std::vector<std::unique_ptr<muster::Agent>> agents(count);
  for (int i = 0; i < count; ++i) {
    auto agent = muster::Agent::Create(system,
                                       {.leader = absl::GetFlag(FLAGS_leader),
                                        .job_name = "worker",
                                        .task_id = first + i,
                                        .register_timeout = absl::Seconds(120),
                                        .heartbeat_batcher = batcher,
                                        .barrier_combiner = combiner},
                                       [&told](const absl::Status&) {
                                         int64_t none = 0;
                                         told.compare_exchange_strong(none, NowUs());
                                       });
    if (!agent.ok()) return std::printf("FAILED create\n"), 1;
    agents[i] = *std::move(agent);
  }
  std::printf("ready\n");
  std::fflush(stdout);
  const absl::Duration bound = absl::Seconds(absl::GetFlag(FLAGS_wait_s));
  if (!WaitForFile(absl::GetFlag(FLAGS_go), bound)) return 1;
  {
    std::vector<std::thread> connecting;
    std::atomic<bool> ok{true};
    for (auto& agent : agents) {
      connecting.emplace_back([&ok, &agent] {
        if (!agent->Connect().ok()) ok = false;
      });
    }
    for (auto& thread : connecting) thread.join();
    if (!ok) return std::printf("FAILED connect\n"), 1;
  }
  if (!Barrier(agents, "joined")) return std::printf("FAILED joined\n"), 1;
  std::printf("JOINED %lld\n", static_cast<long long>(NowUs()));
  std::fflush(stdout);
  if (!WaitForFile(absl::GetFlag(FLAGS_go2), bound)) return 1;
  if (!Barrier(agents, "release")) return std::printf("FAILED release\n"), 1;
  std::printf("RELEASED %lld\n", static_cast<long long>(NowUs()));
  std::fflush(stdout);
  const absl::Time end = absl::Now() + bound;
  while (told.load() == 0 && absl::Now() < end) absl::SleepFor(absl::Microseconds(200));
  if (told.load() != 0) std::printf("TOLD %lld\n", static_cast<long long>(told.load()));
  std::fflush(stdout);
  std::_Exit(0);  // the job failed: no orderly shutdown to wait for
}
