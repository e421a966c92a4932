// A Muster worker task: connects to the leader and registers with a fresh incarnation.
//
// Run:   ./build/examples/leader --jobs=worker=4 --port=7400
// Then:  ./build/examples/worker --leader=127.0.0.1:7400 --job=worker --task=0
//
// Prints "registered /job:worker/task:0 ..." and exits 0, or prints the error and exits 1.
#include <cstdio>
#include <string>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/status/status.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_split.h>
#include <absl/time/time.h>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/messages/incarnation.h"
#include "muster/messages/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/leader_connector_actor.h"
#include "muster/net/node_config.h"

ABSL_FLAG(std::string, leader, "127.0.0.1:7400", "Leader address HOST:PORT");
ABSL_FLAG(std::string, job, "worker", "Job name of this task");
ABSL_FLAG(int, task, 0, "Task id of this task");
ABSL_FLAG(absl::Duration, connect_timeout, absl::Seconds(30), "Give up connecting after this");

namespace {

// Receives errors the leader pushes to this task.
muster::AgentActor::behavior_type AgentBehavior() {
  return {[](const muster::proto::ReportErrorToTaskRequest& report) {
    std::printf("error from leader: %s\n", report.error_message().c_str());
  }};
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "worker: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  muster::ConnectOptions connect;
  std::pair<std::string, std::string> address = absl::StrSplit(absl::GetFlag(FLAGS_leader), ':');
  int port = 0;
  if (!absl::SimpleAtoi(address.second, &port) || port <= 0 || port > 65535) {
    return Fail(absl::InvalidArgumentError("--leader must be HOST:PORT"));
  }
  connect.host = address.first;
  connect.port = static_cast<uint16_t>(port);
  connect.timeout = absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_connect_timeout));

  muster::NodeConfig cfg;
  caf::actor_system system{cfg};
  caf::scoped_actor self{system};
  auto agent = system.spawn(AgentBehavior);
  auto connector = muster::SpawnLeaderConnector(system, connect);
  absl::Status status;
  muster::CoordinatorActor leader;
  self->request(connector, caf::infinite, caf::connect_atom::value)
      .receive([&](muster::CoordinatorActor& handle) { leader = std::move(handle); },
               [&](caf::error& error) { status = muster::ToStatus(error); });
  if (status.ok()) {
    muster::proto::RegisterTaskRequest request;
    *request.mutable_source_task() =
        muster::MakeTask(absl::GetFlag(FLAGS_job), absl::GetFlag(FLAGS_task));
    request.set_incarnation(muster::NewIncarnation());
    self->request(leader, std::chrono::seconds(10), request, agent)
        .receive(
            [&](const muster::proto::RegisterTaskResponse& response) {
              std::printf("registered %s incarnation=0x%016llx leader_incarnation=0x%016llx\n",
                          muster::TaskName(request.source_task()).c_str(),
                          static_cast<unsigned long long>(request.incarnation()),
                          static_cast<unsigned long long>(response.leader_incarnation()));
            },
            [&](caf::error& error) { status = muster::ToStatus(error); });
  }
  caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
  return status.ok() ? 0 : Fail(status);
}
