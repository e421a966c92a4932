// The coordinator as supervisor: task state changes, task failures, error propagation.
#include <optional>

#include <absl/strings/str_cat.h>
#include <absl/time/time.h>

#include "muster/actors/barriers/barrier_actor.h"
#include "muster/actors/coordinator/coordinator_state.h"
#include "muster/messages/status/caf_text.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

absl::Time Now(CoordinatorPointer self) {
  return absl::FromUnixNanos(self->clock().now().time_since_epoch().count());
}

// Pushes `status` to every connected agent (of `job` only, when not empty) except `source`'s.
void Propagate(CoordinatorPointer self, const absl::Status& status,
               const proto::CoordinatedTask& source, const std::string& job) {
  if (self->state.tasks.untold_agents() == 0) return;
  proto::ReportErrorToTaskRequest report = ErrorReport(status, source);
  const auto& tasks = self->state.tasks.view().tasks();
  for (auto& slot : self->state.tasks) {
    if (!slot.agent || slot.error_pushed || SameTask(tasks[slot.index], source)) continue;
    if (!job.empty() && tasks[slot.index].job_name() != job) continue;
    PushError(self, slot, report);
  }
}

void FailJob(CoordinatorPointer self, const absl::Status& status,
             const proto::CoordinatedTask& failed) {
  caf::error error = ToError(status);
  for (const auto& task : self->state.tasks.view().tasks()) {
    if (task.job_name() != failed.job_name() || SameTask(task, failed)) continue;
    SendTaskEvent(self, self->state.tasks.SlotOf(task).actor, TaskEvent::kSetError, 0, error);
  }
}

// The policy's decision on a failed task.
FailureDecision Decide(CoordinatorPointer self, const proto::CoordinatedTask& task,
                       const absl::Status& error) {
  auto& st = self->state;
  FailureDecision decision = st.options.policy->OnTaskFailure(task, error, Now(self));
  // A task that registered as recoverable itself (CoordinatedTask.recoverable) where the policy
  // does not count it recoverable fails alone, as in the reference: its failure is told to
  // nobody and fails no job, and a restart is its own. (Tasks the policy counts recoverable are
  // the policy's to decide: RestartIntensity may still fail their job.)
  // An elastic job's task is recoverable for its job's sake alone: a restart intensity that
  // ends its job still does.
  const bool job_ends =
      decision.action == FailureAction::kFailJob && st.elastic.contains(task.job_name());
  if (st.tasks.view().IsRecoverable(task) && !st.options.policy->IsRecoverable(task) && !job_ends) {
    decision.action = FailureAction::kTolerate;
    if (decision.restart == RestartScope::kAll) decision.restart = RestartScope::kTask;
  }
  // What the cluster is told names the failed task (a policy's own status may name none, and
  // tasks that connect later must not read it as their own), and is an error: the task's own
  // when the policy gave none.
  if (decision.status.ok()) decision.status = error;
  std::optional<proto::CoordinationServiceError> payload = GetCoordinationError(decision.status);
  if (!payload || !payload->has_source_task()) {
    decision.status =
        MakeCoordinationError(decision.status, task, payload && payload->is_reported_error());
  }
  return decision;
}

// Whether `decision` tells the whole cluster, and the tasks that connect later too (unless the
// failed tasks are restarted: they register again, and must not be handed the error they are
// restarted after).
bool TellsTheCluster(const FailureDecision& decision) {
  return (decision.action == FailureAction::kFailJob ||
          decision.action == FailureAction::kPropagateToCluster) &&
         decision.restart == RestartScope::kNone;
}

void ApplyPolicy(CoordinatorPointer self, const proto::CoordinatedTask& task,
                 const FailureDecision& decision) {
  switch (decision.action) {
    case FailureAction::kTolerate:
      break;
    case FailureAction::kPropagateToJob:
      Propagate(self, decision.status, task, task.job_name());
      break;
    case FailureAction::kFailJob:
      FailJob(self, decision.status, task);
      [[fallthrough]];
    case FailureAction::kPropagateToCluster:
      // Tasks that register later learn it too (st.cluster_error, set by OnChildDown).
      Propagate(self, decision.status, task, "");
      break;
  }
  RestartAndNotify(self, task, decision);
}

absl::Status FailureStatus(const caf::down_msg& down, const proto::CoordinatedTask& task) {
  absl::Status status = ToStatus(down.reason);
  if (GetCoordinationError(status)) return status;
  return MakeCoordinationError(
      absl::InternalError(absl::StrCat("the task actor of ", TaskName(task),
                                       " stopped unexpectedly: ", StatusText(status))),
      task);
}

}  // namespace

void SpawnTask(CoordinatorPointer self, const proto::CoordinatedTask& task,
               const proto::CoordinatedTaskStateInfo& initial, caf::timespan reconnect_window) {
  auto& st = self->state;
  TaskSpec spec{.task = task,
                .leader_incarnation = st.options.incarnation,
                .heartbeat_timeout = st.heartbeat_timeout,
                .connection_loss_grace = st.connection_loss_grace,
                .recoverable = st.tasks.view().IsRecoverable(task),
                .initial = initial,
                .reconnect_window = reconnect_window,
                .direct_port = st.options.direct_port,
                .parent = caf::actor_cast<TaskParentActor>(self)};
  TaskActor actor = SpawnTaskActor(self->system(), std::move(spec));
  self->monitor(actor);
  st.children->emplace(actor.address(), caf::actor_cast<caf::actor>(actor));
  st.tasks.SetActor(st.tasks.SlotOf(task), std::move(actor));
}

proto::WatchJobStateResponse JobState(CoordinatorPointer self, const std::string& job) {
  proto::WatchJobStateResponse response;
  response.set_version_number(self->state.tasks.version());
  for (const auto& task : self->state.tasks.view().tasks()) {
    if (job.empty() || task.job_name() == job) {
      *response.add_task_state() = *self->state.tasks.view().Find(task);
    }
  }
  return response;
}

void PushError(CoordinatorPointer self, TaskSlot& slot,
               const proto::ReportErrorToTaskRequest& report) {
  if (AgentActor agent = self->state.tasks.TakeUntold(slot)) {
    SendErrorOnceDurable(self, agent, report);
  }
}

void SendErrorOnceDurable(CoordinatorPointer self, const AgentActor& agent,
                          proto::ReportErrorToTaskRequest report) {
  self->state.records.gate().After(
      [self, agent, report = std::move(report)](const absl::Status& durable) {
        if (durable.ok()) self->send(agent, report);
      });
}

void OnTaskState(CoordinatorPointer self, const proto::CoordinatedTaskStateInfo& info,
                 const AgentActor& agent) {
  auto& st = self->state;
  if (!st.tasks.view().Update(info)) return;
  if (EventsWanted(self)) EmitEvent(self, TaskStateEvent(info));
  TaskSlot& slot = st.tasks.SlotOf(info.task());
  if (info.state() == proto::TASKSTATE_CONNECTED) {
    self->send(st.heartbeats, hb_watch_atom::value, slot.index, info.incarnation(), slot.actor);
    st.tasks.SetAgent(slot, agent);
    if (agent) slot.agent_node = agent.node();
    if (st.cluster_error && !st.tasks.view().IsRecoverable(info.task())) {
      PushError(self, slot, ErrorReport(*st.cluster_error, info.task()));
    }
  } else {
    self->send(st.heartbeats, hb_unwatch_atom::value, slot.index);
    st.tasks.SetAgent(slot, AgentActor{});
  }
  uint64_t ended = st.tasks.Live(slot, info, self->clock().now());
  st.tasks.BumpVersion();
  st.listeners.Publish(TaskStateChange{.info = info, .slot = slot, .ended_incarnation = ended});
}

void RegisterTaskStateListeners(CoordinatorPointer self) {
  TaskStateListeners& listeners = self->state.listeners;
  listeners.Add([self](const TaskStateChange& change) { OnHealthState(self, change); });
  listeners.Add([self](const TaskStateChange& change) { OnEphemeralOwnerState(self, change); });
  listeners.Add([self](const TaskStateChange& change) { PersistTaskState(self, change.info); });
  listeners.Add([self](const TaskStateChange&) {  // job-state watches
    auto& st = self->state;
    for (auto& watch : st.watches) watch.promise.deliver(JobState(self, watch.job));
    st.watches.clear();
  });
  listeners.Add([self](const TaskStateChange& change) {  // the barriers it takes part in
    for (const BarrierActor& barrier : self->state.barriers.LiveActorsFor(change.info.task())) {
      self->send(barrier, change.info);
    }
  });
  listeners.Add([self](const TaskStateChange&) {  // GetAliveTasks calls
    self->state.alive.Refresh(self->state.tasks.view());
  });
  listeners.Add([self](const TaskStateChange& change) {  // the device exchange
    if (self->state.devices) self->state.devices->OnTaskState(change.info);
  });
  listeners.Add([self](const TaskStateChange& change) { OnMembershipState(self, change); });
}

absl::Status ActsAsItself(CoordinatorPointer self, const proto::CoordinatedTask& task) {
  const TaskSlot* slot = self->state.tasks.Find(task);
  if (slot == nullptr || slot->agent_node == caf::node_id{}) {
    return absl::OkStatus();  // unknown tasks get their own error; a task never connected
  }
  const caf::strong_actor_ptr& sender = self->current_sender();
  // The coordinator itself, and the task's own task actor (arriving at the register barrier).
  if (sender && (sender->node() == slot->agent_node || sender == self->ctrl() ||
                 sender == caf::actor_cast<caf::strong_actor_ptr>(slot->actor))) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "A request acting as task ", TaskName(task), " came from ",
      sender ? PeerName(sender->node()) : std::string("an anonymous sender"),
      ", not from the node on which that task registered; a task may act only as itself"));
}

void OnChildDown(CoordinatorPointer self, const caf::down_msg& down) {
  auto& st = self->state;
  std::optional<uint32_t> owner = st.tasks.TakeOwner(down.source);
  if (!owner) return;
  proto::CoordinatedTask task = st.tasks.view().tasks()[*owner];
  absl::Status error = FailureStatus(down, task);
  proto::CoordinatedTaskStateInfo info = *st.tasks.view().Find(task);
  info.set_state(proto::TASKSTATE_ERROR);
  SetStatusFields(error, &info);
  const AgentActor own = st.tasks.SlotOf(task).agent;
  const FailureDecision decision = Decide(self, task, error);
  if (TellsTheCluster(decision)) {
    // Kept with the leader record in the failed task's own durable write (OnTaskState's): a
    // leader that stops before its pushes leave leaves the error to the next one, which tells
    // the tasks that reconnect.
    st.cluster_error = KeptClusterError(decision.status);
    st.records.SetClusterError(*st.cluster_error, st.launchers.round());
  }
  SpawnTask(self, task, info);
  OnTaskState(self, info, AgentActor{});
  // A stuck task hears it first, with the report the others get (its error callback fires
  // even if the policy tells nobody else), once its ERROR state is durable.
  if (own && GetTaskStuck(error)) {
    proto::ReportErrorToTaskRequest report;
    SetStatusFields(error, &report);
    SendErrorOnceDurable(self, own, std::move(report));
  }
  ApplyPolicy(self, task, decision);
}

}  // namespace muster
