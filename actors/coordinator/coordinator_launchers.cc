// The coordinator and its launchers: a launcher (`muster run`) registers the tasks whose
// processes it runs, reports processes that exited on their own, and is told after every task
// failure what the supervision policy decided. The coordinator carries out the restart side of
// a decision itself: the restarted tasks are disconnected (their next process registers as a new
// incarnation) and start a new generation; a restart of every task also starts a new round.
#include <algorithm>

#include <absl/container/flat_hash_set.h>
#include <absl/strings/str_cat.h>

#include "muster/actors/caf/hardening.h"
#include "muster/actors/coordinator/coordinator_state.h"
#include "muster/messages/process_exit.h"
#include "muster/messages/status/caf_text.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

// How far ahead of the recorded generation a rejoining launcher's process may be: a leader
// tells a restart before the new generation is recorded, so a launcher that restarted a task
// just before a failover runs one the next leader has not recorded.
constexpr int64_t kMaxRejoinGenerationLead = 16;

// OK when the current message comes from this process or from the node of `slot`'s launcher.
absl::Status FromLauncherOf(CoordinatorPointer self, const TaskSlot& slot,
                            const proto::CoordinatedTask& task) {
  const caf::strong_actor_ptr& sender = self->current_sender();
  const LauncherActor& launcher = self->state.launchers.LauncherOf(slot.index);
  if (FromThisNode(self) || (sender && launcher && sender->node() == launcher.node())) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "TaskExited of ", TaskName(task), " came from ",
      sender ? PeerName(sender->node()) : std::string("an anonymous sender"),
      ", which does not run its process; a launcher reports only the processes of its own tasks"));
}

absl::Status CheckLauncherTasks(CoordinatorPointer self,
                                const proto::RegisterLauncherRequest& request,
                                const LauncherActor& launcher) {
  const auto& st = self->state;
  if (request.tasks().empty()) {
    return absl::InvalidArgumentError("RegisterLauncher names no tasks; name the tasks it runs");
  }
  if (request.tasks_size() > static_cast<int>(st.tasks.view().tasks().size())) {
    return absl::InvalidArgumentError(absl::StrCat("RegisterLauncher names ", request.tasks_size(),
                                                   " tasks; the cluster has ",
                                                   st.tasks.view().tasks().size()));
  }
  if (!request.rejoin() && request.generations_size() > 0) {
    return absl::InvalidArgumentError(
        "RegisterLauncher gives generations without rejoin; only a rejoining launcher says which "
        "generations it runs");
  }
  if (request.rejoin() && !st.options.state_writer) {
    return absl::FailedPreconditionError(
        "RegisterLauncher rejoins, but this leader took over no earlier leader's state (it runs "
        "without --state-dir or --ha-etcd): a launcher rejoins only an HA job's next leader; "
        "register as a new launcher");
  }
  if (request.rejoin() && request.generations_size() != request.tasks_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RegisterLauncher rejoins with ", request.generations_size(), " generations for ",
        request.tasks_size(), " tasks; give the generation of each task's process"));
  }
  absl::flat_hash_set<std::string> seen;
  for (int i = 0; i < request.tasks_size(); ++i) {
    const proto::CoordinatedTask& task = request.tasks(i);
    if (!st.tasks.view().IsKnown(task))
      return UnknownTaskError("RegisterLauncher for unknown task ", task);
    std::string name = TaskName(task);
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("RegisterLauncher names ", name, " twice; name each task once"));
    }
    const TaskSlot& slot = st.tasks.SlotOf(task);
    const LauncherActor& other = st.launchers.LauncherOf(slot.index);
    if (request.rejoin()) {
      const int64_t recorded = st.launchers.generation(slot.index);
      const int64_t running = request.generations(i);
      if (running < 0 || running > recorded + kMaxRejoinGenerationLead) {
        return absl::InvalidArgumentError(
            absl::StrCat("RegisterLauncher rejoins with generation ", running, " of ", name,
                         ", whose recorded generation is ", recorded,
                         "; a launcher rejoins with the "
                         "generation of the process it runs (at most ",
                         kMaxRejoinGenerationLead, " ahead)"));
      }
    }
    // A rejoining launcher's tasks reconnected to this leader before it did: their processes
    // are its own.
    if (slot.agent && other != launcher && !request.rejoin()) {
      return absl::FailedPreconditionError(
          absl::StrCat(name,
                       " is connected already, from a process no launcher started; a launcher "
                       "registers the tasks whose processes it is about to start"));
    }
    if (other && other != launcher) {
      return absl::AlreadyExistsError(
          absl::StrCat(name, " is run by another launcher (on ", PeerName(other.node()),
                       "); a task has one launcher: stop that one first, or name other tasks"));
    }
  }
  return absl::OkStatus();
}

// The task of `slot` is restarted: the process its launcher ran for it is fenced (a task no
// launcher runs may come back in the same process, and is not).
void FenceProcessOf(CoordinatorPointer self, const TaskSlot& slot) {
  auto& st = self->state;
  if (!st.launchers.LauncherOf(slot.index) || slot.agent_node == self->node()) return;
  st.fence.Fence(slot.agent_node, {.task = st.tasks.view().tasks()[slot.index],
                                   .generation = st.launchers.generation(slot.index),
                                   .round = st.launchers.round()});
}

// Every task starts again: disconnected (the next process registers as a new incarnation), in
// a new generation, with an empty store, no barriers and a fresh device exchange. The deletes
// and the barrier stops are sent from here, before any request of the new round can arrive.
void StartNewRound(CoordinatorPointer self) {
  auto& st = self->state;
  for (const auto& slot : st.tasks) FenceProcessOf(self, slot);
  st.launchers.NewRound();
  st.cluster_error.reset();
  st.health.preemption.reset();  // the new round's tasks start from step 0 again
  for (auto& slot : st.tasks) SendTaskEvent(self, slot.actor, TaskEvent::kDisconnect);
  proto::DeleteKeyValueRequest everything;
  everything.set_is_directory(true);
  everything.set_delete_root(true);
  for (const KvDirectoryActor& directory : st.kv.Directories()) {
    self->request(directory, caf::infinite, everything)
        .then([](const proto::DeleteKeyValueResponse&) {}, [](const caf::error&) {});
  }
  for (const BarrierActor& barrier : st.barriers.LiveActors()) {
    self->send_exit(barrier, caf::exit_reason::user_shutdown);
  }
  PersistNewRound(self, st.barriers.Ids());
  st.barriers = NewBarrierRegistry(st);
  st.service.shutdown_arrived.clear();
  if (st.devices) {
    st.devices->Abort(MakeCoordinationError(absl::AbortedError(
        "every task is restarted (a new round): this WaitForAllTasks belongs to the last one")));
  }
  st.devices.emplace(st.options.device_aggregator, st.options.incarnation);
}

}  // namespace

absl::Status IsCurrentGeneration(CoordinatorPointer self,
                                 const proto::RegisterTaskRequest& request) {
  if (!request.has_generation()) return absl::OkStatus();
  const auto& st = self->state;
  const uint32_t index = st.tasks.SlotOf(request.source_task()).index;
  if (!st.launchers.LauncherOf(index) || request.generation() >= st.launchers.generation(index)) {
    return absl::OkStatus();
  }
  return MakeCoordinationError(absl::FailedPreconditionError(
      absl::StrCat("This process was started as generation ", request.generation(), " of ",
                   TaskName(request.source_task()), ", and its launcher has started generation ",
                   st.launchers.generation(index),
                   " since (the task was restarted): it may not register; its launcher stops it")));
}

caf::error Fenced(CoordinatorPointer self) {
  auto& st = self->state;
  const caf::strong_actor_ptr& sender = self->current_sender();
  if (st.fence.size() == 0 || !sender) return caf::error{};
  absl::Status refused = st.fence.Check(sender->node(), st.launchers.round());
  if (refused.ok()) return caf::error{};
  return ToError(MakeCoordinationError(refused));
}

caf::result<proto::RegisterLauncherResponse> RegisterLauncher(
    CoordinatorPointer self, const proto::RegisterLauncherRequest& request,
    const LauncherActor& launcher) {
  auto& st = self->state;
  const caf::strong_actor_ptr& sender = self->current_sender();
  if (!launcher || !sender || launcher.node() != sender->node()) {
    return ToError(absl::PermissionDeniedError(
        "RegisterLauncher must name the sender's own launcher actor; a node registers only "
        "itself"));
  }
  if (absl::Status ok = CheckLauncherTasks(self, request, launcher); !ok.ok()) return ToError(ok);
  if (st.launchers.Add(launcher)) self->monitor(launcher);
  proto::RegisterLauncherResponse response;
  response.set_leader_incarnation(st.options.incarnation);
  response.set_round(st.launchers.round());
  for (int i = 0; i < request.tasks_size(); ++i) {
    uint32_t index = st.tasks.SlotOf(request.tasks(i)).index;
    st.launchers.Assign(index, launcher);
    // A process started for a restart this leader did not record is the task's current one.
    if (request.rejoin() && request.generations(i) > st.launchers.generation(index)) {
      st.launchers.set_generation(index, request.generations(i));
    }
    response.add_generations(st.launchers.generation(index));
  }
  for (const auto& task : st.tasks.view().tasks()) *response.add_cluster() = task;
  return response;
}

caf::result<proto::TaskExitedResponse> TaskExited(CoordinatorPointer self,
                                                  const proto::TaskExitedRequest& request) {
  auto& st = self->state;
  TaskSlot* found = st.tasks.Find(request.task());
  if (found == nullptr) {
    return ToError(UnknownTaskError("TaskExited of unknown task ", request.task()));
  }
  TaskSlot& slot = *found;
  if (absl::Status own = FromLauncherOf(self, slot, request.task()); !own.ok()) return ToError(own);
  proto::TaskExitedResponse ignored;
  // An earlier generation's process (its task was restarted already), a process that exited
  // cleanly (leaving is its agent's business), or the consequence of a job that failed already.
  if (request.generation() != st.launchers.generation(slot.index)) return ignored;
  if (request.exit_code() == 0 && request.signal() == 0) return ignored;
  if (st.cluster_error && !st.tasks.view().IsRecoverable(request.task())) return ignored;
  absl::Status failure = MakeCoordinationError(
      absl::UnavailableError(absl::StrCat(
          "The process of ", TaskName(request.task()), " ",
          ProcessExitText(request.exit_code(), request.signal()),
          " (reported by its launcher). Its launcher restarts it if the supervision policy "
          "says so.")),
      request.task());
  auto promise = self->make_response_promise<proto::TaskExitedResponse>();
  self->request(slot.actor, caf::infinite, exited_atom::value, ToError(failure))
      .then(
          [promise](bool recorded) mutable {
            proto::TaskExitedResponse response;
            response.set_failure_recorded(recorded);
            promise.deliver(std::move(response));
          },
          // The task actor died a moment ago of another failure: that one is recorded.
          [promise](const caf::error&) mutable { promise.deliver(proto::TaskExitedResponse()); });
  return promise;
}

proto::LauncherStatusResponse LauncherStatus(CoordinatorPointer self) {
  proto::LauncherStatusResponse response;
  response.set_launchers(static_cast<int32_t>(self->state.launchers.launchers().size()));
  response.set_connected_tasks(self->state.tasks.ConnectedAgents());
  return response;
}

void RestartAndNotify(CoordinatorPointer self, const proto::CoordinatedTask& failed,
                      const FailureDecision& decision) {
  auto& st = self->state;
  if (decision.restart == RestartScope::kTask) {
    TaskSlot& slot = st.tasks.SlotOf(failed);
    FenceProcessOf(self, slot);
    st.launchers.Restart(slot.index);
    SendTaskEvent(self, slot.actor, TaskEvent::kDisconnect);
  } else if (decision.restart == RestartScope::kAll) {
    StartNewRound(self);
  }
  if (EventsWanted(self)) EmitDecisionEvents(self, failed, decision);
  if (st.launchers.empty()) return;
  proto::SupervisionEvent event;
  *event.mutable_failed_task() = failed;
  SetStatusFields(decision.status, &event);
  event.set_restart(decision.restart == RestartScope::kTask  ? proto::RESTART_TASK
                    : decision.restart == RestartScope::kAll ? proto::RESTART_ALL
                                                             : proto::RESTART_NONE);
  event.set_job_failed(decision.restart == RestartScope::kNone &&
                       (decision.action == FailureAction::kPropagateToCluster ||
                        decision.action == FailureAction::kFailJob));
  event.set_round(st.launchers.round());
  for (const LauncherActor& launcher : st.launchers.launchers()) {
    proto::SupervisionEvent own = event;
    for (const auto& task : st.tasks.view().tasks()) {
      if (decision.restart == RestartScope::kNone) break;
      if (decision.restart == RestartScope::kTask && !SameTask(task, failed)) continue;
      const uint32_t index = st.tasks.SlotOf(task).index;
      if (st.launchers.LauncherOf(index) != launcher) continue;
      auto* restart = own.add_restarts();
      *restart->mutable_task() = task;
      restart->set_generation(st.launchers.generation(index));
    }
    self->send(launcher, std::move(own));
  }
}

}  // namespace muster
