#include "muster/actors/coordinator_actor.h"

#include <string>

#include <absl/container/flat_hash_map.h>
#include <absl/strings/str_cat.h>

#include "muster/messages/incarnation.h"
#include "muster/messages/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

struct CoordinatorState {
  static inline const char* name = "muster.coordinator";
  CoordinatorOptions options;
  // Registered incarnation per task name.
  absl::flat_hash_map<std::string, uint64_t> incarnations;
};

using CoordinatorPointer = CoordinatorActor::stateful_pointer<CoordinatorState>;

bool IsConfiguredTask(const proto::CoordinationServiceConfig& config,
                      const proto::CoordinatedTask& task) {
  for (const auto& job : config.coordinated_job_list()) {
    if (job.name() == task.job_name())
      return task.task_id() >= 0 && task.task_id() < job.num_tasks();
  }
  return false;
}

caf::result<proto::RegisterTaskResponse> RegisterTask(CoordinatorPointer self,
                                                      const proto::RegisterTaskRequest& request) {
  const auto& task = request.source_task();
  if (!IsConfiguredTask(self->state.options.config, task)) {
    return ToError(MakeCoordinationError(absl::InvalidArgumentError(
        absl::StrCat("Unexpected task registered with task=", TaskName(task),
                     ": it is not in the cluster configuration; check the job name and task id"))));
  }
  self->state.incarnations[TaskName(task)] = request.incarnation();
  proto::RegisterTaskResponse response;
  response.set_leader_incarnation(self->state.options.incarnation);
  return response;
}

CoordinatorActor::behavior_type CoordinatorBehavior(CoordinatorPointer self,
                                                    CoordinatorOptions options) {
  if (options.incarnation == 0) options.incarnation = NewIncarnation();
  self->state.options = std::move(options);
  return {
      [=](const proto::RegisterTaskRequest& request, const AgentActor&) {
        return RegisterTask(self, request);
      },
  };
}

}  // namespace

CoordinatorActor SpawnCoordinator(caf::actor_system& system, CoordinatorOptions options) {
  return system.spawn(CoordinatorBehavior, std::move(options));
}

}  // namespace muster
