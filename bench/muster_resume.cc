// The resume workload's clients: each process runs its share of the tasks as real agents
// (muster::Agent, leader_reconnect_timeout 60 s). After "go" (sent when the driver has killed the
// leader) every agent makes one call; the calls wait in the agents while they reconnect to the
// restarted leader and are answered once each agent has registered again. The process reports
// when its last call was answered ("result end=").
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <absl/synchronization/notification.h>

#include "muster/bench/harness.h"
#include "muster/bench/muster_bench.h"
#include "muster/messages/requests/kv_requests.h"
#include "muster/net/agent/agent.h"

namespace muster::bench {

int RunResumeClient(caf::actor_system& system, const ClientArgs& args) {
  std::vector<std::unique_ptr<Agent>> agents;
  std::atomic<int64_t> errors{0};
  std::atomic<bool> reported{false};  // errors after the result (the driver stopping) don't count
  for (int64_t i = 0; i < args.Count(); ++i) {
    AgentOptions options{.leader = "127.0.0.1:" + std::to_string(args.port),
                         .job_name = "worker",
                         .task_id = static_cast<int>(args.First() + i),
                         .heartbeat_timeout = absl::Seconds(10),
                         .register_timeout = absl::Seconds(60)};
    options.leader_reconnect_timeout = absl::Seconds(60);
    options.shutdown_on_destruction = false;
    auto agent = Agent::Create(system, options, [&](const absl::Status& error) {
      if (reported) return;
      if (errors++ == 0)
        std::fprintf(stderr, "muster_bench resume: %s\n", error.ToString().c_str());
    });
    if (!agent.ok() || !(*agent)->Connect().ok()) {
      std::fprintf(stderr, "muster_bench resume: task %lld did not connect\n",
                   static_cast<long long>(args.First() + i));
      return 1;
    }
    agents.push_back(*std::move(agent));
  }
  Emit("ready");
  WaitForGo();
  std::atomic<int64_t> left{static_cast<int64_t>(agents.size())};
  absl::Notification all_answered;
  std::atomic<int64_t> end_ns{0};
  for (auto& agent : agents) {
    // NotFound is an answer like any other.
    proto::TryGetKeyValueRequest request = requests::TryGetKeyValue("resume/absent");
    agent->CallAsync<proto::TryGetKeyValueResponse>(
        [&](absl::StatusOr<proto::TryGetKeyValueResponse> result) {
          if (!result.ok() && result.status().code() != absl::StatusCode::kNotFound &&
              errors++ == 0) {
            std::fprintf(stderr, "muster_bench resume: %s\n", result.status().ToString().c_str());
          }
          if (--left == 0) {
            end_ns = MonoNs();
            all_answered.Notify();
          }
        },
        request);
  }
  if (!all_answered.WaitForNotificationWithTimeout(absl::Seconds(90))) return 1;
  reported = true;
  Emit("result", "end=" + std::to_string(end_ns.load()) + " errors=" + std::to_string(errors));
  std::fflush(stdout);
  // Stays connected until the driver has every result (an exit now would be a task failure
  // that the leader reports to the tasks still waiting); the driver then kills the process.
  WaitForGo();
  std::_Exit(0);  // the agents' destructors would wait for a leader that the driver stops
}

}  // namespace muster::bench
