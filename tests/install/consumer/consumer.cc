// Uses the installed headers, generated protos and library: formats a task name and spawns a
// coordinator in a local actor system.
#include <cstdio>

#include <caf/actor_system.hpp>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/messages/task_name.h"
#include "muster/net/transport/node_config.h"
#include "muster/proto/coordination_service.pb.h"

int main() {
  muster::NodeConfig cfg;
  caf::actor_system system{cfg};
  muster::CoordinatorOptions options;
  options.config.add_coordinated_job_list()->set_name("worker");
  auto coordinator = muster::SpawnCoordinator(system, options);
  caf::anon_send_exit(coordinator, caf::exit_reason::user_shutdown);
  std::printf("consumer ok %s\n", muster::TaskName(muster::MakeTask("worker", 1)).c_str());
  return 0;
}
