// What watching a big job costs its leader: a leader in this process with --tasks registered
// tasks (100,000 by default) and --http, scraped over HTTP like Prometheus does, side by side
// with the cheapest read of every task's state (one GetTaskState of all tasks, what
// `muster status` sends first). Prints one row per measurement: the wall time of one scrape
// (median and worst of --scrapes), the leader's CPU per scrape (the process's CPU time over the
// scrapes, the client's share included, so an upper bound), and that CPU as a share of one core
// at a 15 s scrape interval. Not a test: timings are printed, never asserted.
//
//   build/bench/scrape_bench [--tasks=100000] [--scrapes=20]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/strings/str_cat.h>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/messages/task_name.h"
#include "muster/net/leader/leader.h"
#include "muster/net/transport/node_config.h"
#include "tests/testing/http_get.h"

ABSL_FLAG(int, tasks, 100'000, "registered tasks");
ABSL_FLAG(int, scrapes, 20, "scrapes per measurement");

namespace muster {
namespace {

using Clock = std::chrono::steady_clock;

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

struct Row {
  std::string what;
  std::vector<double> wall_ms;
  double cpu_ms_each = 0;
  size_t bytes = 0;
};

template <class Scrape>
Row Measure(const std::string& what, int scrapes, Scrape scrape) {
  Row row{what};
  scrape();  // warm
  double cpu = 0;
  for (int i = 0; i < scrapes; ++i) {
    // Past the observer's 500 ms cache: every scrape takes a new snapshot.
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    double cpu_before = CpuSeconds();
    auto start = Clock::now();
    row.bytes = scrape();
    row.wall_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    cpu += CpuSeconds() - cpu_before;
  }
  row.cpu_ms_each = cpu * 1000 / scrapes;
  std::sort(row.wall_ms.begin(), row.wall_ms.end());
  return row;
}

void Print(const Row& row) {
  double median = row.wall_ms[row.wall_ms.size() / 2];
  double worst = row.wall_ms.back();
  double share = row.cpu_ms_each / 15'000 * 100;
  std::printf("| %-44s | %9.1f | %8.1f | %10.1f | %11.3f%% | %9zu |\n", row.what.c_str(), median,
              worst, row.cpu_ms_each, share, row.bytes);
}

int Run() {
  const int tasks = absl::GetFlag(FLAGS_tasks);
  const int scrapes = absl::GetFlag(FLAGS_scrapes);
  NodeConfig config;
  caf::actor_system system{config};
  CoordinatorOptions options;
  auto* job = options.config.add_coordinated_job_list();
  job->set_name("worker");
  job->set_num_tasks(tasks);
  options.config.set_heartbeat_timeout_in_ms(3'600'000);  // registered tasks stay CONNECTED
  LeaderEndpoint endpoint;
  endpoint.http = HttpOptions{};
  auto leader = Leader::Start(system, options, std::move(endpoint));
  if (!leader.ok()) {
    std::fprintf(stderr, "scrape_bench: %s\n", leader.status().ToString().c_str());
    return 1;
  }
  // Every task registered by an agent of this process, one request after the other.
  auto start = Clock::now();
  AgentActor agents;
  {
    caf::scoped_actor self{system};
    AgentActor agent = system.spawn([]() -> AgentActor::behavior_type {
      return {[](const proto::ReportErrorToTaskRequest&) {},
              [](const proto::PreemptionNotice&) { return proto::PreemptionAck(); },
              [](const proto::SyncPointNotice&) {}, [](const proto::MembershipNotice&) {}};
    });
    for (int i = 0; i < tasks; ++i) {
      proto::RegisterTaskRequest request;
      *request.mutable_source_task() = MakeTask("worker", i);
      request.set_incarnation(1000 + i);
      self->request((*leader)->coordinator(), std::chrono::seconds(30), request, agent)
          .receive([](proto::RegisterTaskResponse&) {},
                   [&](caf::error& error) {
                     std::fprintf(stderr, "scrape_bench: task %d: %s\n", i,
                                  to_string(error).c_str());
                   });
    }
    agents = agent;  // alive until the end: an agent that goes away fails its tasks
  }
  std::printf("scrape_bench: %d tasks registered in %.1f s\n\n", tasks,
              std::chrono::duration<double>(Clock::now() - start).count());

  std::string url = (*leader)->http_url();
  std::printf("| %-44s | %9s | %8s | %10s | %12s | %9s |\n", "what (one scrape)", "median ms",
              "worst ms", "CPU ms", "CPU @ 15 s", "bytes");
  std::printf("|%s|%s|%s|%s|%s|%s|\n", std::string(46, '-').c_str(), std::string(11, '-').c_str(),
              std::string(10, '-').c_str(), std::string(12, '-').c_str(),
              std::string(14, '-').c_str(), std::string(11, '-').c_str());
  Print(Measure("GetTaskState of every task (the floor)", scrapes, [&]() -> size_t {
    caf::scoped_actor self{system};
    proto::GetTaskStateRequest request;
    for (int i = 0; i < tasks; ++i) *request.add_source_task() = MakeTask("worker", i);
    size_t bytes = 0;
    self->request((*leader)->coordinator(), std::chrono::seconds(30), request)
        .receive([&](proto::GetTaskStateResponse& r) { bytes = r.ByteSizeLong(); },
                 [&](caf::error&) {});
    return bytes;
  }));
  Print(Measure("GetTaskColumns (the snapshot's task part)", scrapes, [&]() -> size_t {
    caf::scoped_actor self{system};
    size_t bytes = 0;
    self->request((*leader)->coordinator(), std::chrono::seconds(30),
                  proto::GetTaskColumnsRequest())
        .receive([&](proto::TaskColumns& r) { bytes = r.ByteSizeLong(); }, [&](caf::error&) {});
    return bytes;
  }));
  Print(Measure("GET /metrics (Prometheus)", scrapes,
                [&]() -> size_t { return testing::HttpGet(url, "/metrics").body.size(); }));
  Print(Measure("GET /api/state (the live page's JSON)", scrapes,
                [&]() -> size_t { return testing::HttpGet(url, "/api/state").body.size(); }));
  (*leader)->Stop();
  caf::anon_send_exit(agents, caf::exit_reason::user_shutdown);
  return 0;
}

}  // namespace
}  // namespace muster

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return muster::Run();
}
