// The coordinator's barrier routing, and the two service barriers built on it: the register
// barrier (every task registers before any registration returns) and the shutdown barrier
// (every non-recoverable task reaches shutdown before any disconnects).
#include <absl/strings/str_cat.h>

#include "muster/actors/barriers/barrier_actor.h"
#include "muster/actors/coordinator/coordinator_state.h"
#include "muster/messages/requests/barrier_requests.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/messages/vocabulary/group_reply.h"

namespace muster {
namespace {

// A service barrier's arrival of `source` (its timeout is finite: whole milliseconds).
proto::BarrierRequest ServiceBarrier(const std::string& id, caf::timespan timeout,
                                     const proto::CoordinatedTask& source,
                                     const std::vector<proto::CoordinatedTask>& tasks) {
  proto::BarrierRequest request = requests::Barrier(id, absl::FromChrono(timeout), tasks);
  *request.mutable_source_task() = source;
  return request;
}

// The shutdown barrier's participants: every task that is not recoverable.
std::vector<proto::CoordinatedTask> ShutdownParticipants(CoordinatorPointer self) {
  std::vector<proto::CoordinatedTask> tasks;
  for (const auto& task : self->state.tasks.view().tasks()) {
    if (!self->state.tasks.view().IsRecoverable(task)) tasks.push_back(task);
  }
  return tasks;
}

void SetAllTasksError(CoordinatorPointer self, const absl::Status& status) {
  caf::error error = ToError(status);
  for (const auto& slot : self->state.tasks) {
    SendTaskEvent(self, slot.actor, TaskEvent::kSetError, 0, error);
  }
}

// Pushes `status` to every connected agent except those of `skip`.
void PropagateToAll(CoordinatorPointer self, const absl::Status& status,
                    const absl::flat_hash_set<std::string>& skip) {
  if (self->state.tasks.untold_agents() == 0) return;
  proto::ReportErrorToTaskRequest report;
  SetStatusFields(status, &report);
  const auto& tasks = self->state.tasks.view().tasks();
  for (auto& slot : self->state.tasks) {
    if (skip.empty() || !skip.contains(TaskName(tasks[slot.index]))) PushError(self, slot, report);
  }
}

absl::Status ShutdownFailed(const absl::Status& barrier) {
  return MakeCoordinationError(absl::InternalError(absl::StrCat(
      "Shutdown barrier has failed.\nBarrier result: '", StatusText(barrier),
      "'. Every task is set to ERROR so that restarted tasks cannot silently rejoin.")));
}

// The shutdown barrier's failure as the other tasks learn it: its source is the first task
// that did not reach the barrier, and the message lists all of them.
absl::Status ShutdownFailedFor(CoordinatorPointer self, const absl::Status& barrier) {
  std::vector<proto::CoordinatedTask> missing;
  for (const auto& task : ShutdownParticipants(self)) {
    if (!self->state.service.shutdown_arrived.contains(TaskName(task))) missing.push_back(task);
  }
  if (missing.empty()) return ShutdownFailed(barrier);
  return MakeCoordinationError(
      absl::InternalError(absl::StrCat(
          "Shutdown barrier has failed: ", missing.size(), " task(s) did not reach it (",
          SummarizeTasks(missing), ").\nBarrier result: '", StatusText(barrier),
          "'. Every task is set to ERROR so that restarted tasks cannot silently rejoin.")),
      missing.front());
}

}  // namespace

namespace {

// Where a barrier call goes: the registry's immediate answer, or the instance's actor (spawned
// when the call starts a new instance).
BarrierRoute ResolveBarrier(CoordinatorPointer self, proto::BarrierRequest* request) {
  auto& st = self->state;
  BarrierRoute route = st.barriers.RouteBarrier(request, st.tasks.view(), self->clock().now());
  if (route.action == BarrierRoute::Action::kStart) {
    if (EventsWanted(self)) EmitEvent(self, BarrierOpenedEvent(*route.spec));
    route.spec->writer = st.options.state_writer;
    route.actor = SpawnBarrier(self->system(), std::move(*route.spec),
                               caf::actor_cast<BarrierParentActor>(self));
    st.barriers.Started(request->barrier_id(), route.actor);
  }
  return route;
}

}  // namespace

caf::result<proto::BarrierResponse> RouteBarrier(CoordinatorPointer self,
                                                 proto::BarrierRequest request) {
  if (absl::Status own = ActsAsItself(self, request.source_task()); !own.ok()) {
    return BarrierReply(MakeBarrierError(own, request.barrier_id(), request.counter()));
  }
  BarrierRoute route = ResolveBarrier(self, &request);
  if (route.action == BarrierRoute::Action::kReply) return BarrierReply(route.reply);
  return self->delegate(route.actor, std::move(request));
}

caf::result<proto::BarrierGroupResponse> RouteBarrierGroup(
    CoordinatorPointer self, const proto::BarrierGroupRequest& group) {
  // Before the promise: making it takes the sender out of the current message.
  std::vector<absl::Status> own(group.sources_size());
  for (int i = 0; i < group.sources_size(); ++i) own[i] = ActsAsItself(self, group.sources(i));
  auto promise = self->make_response_promise<proto::BarrierGroupResponse>();
  auto reply = std::make_shared<GroupReply<proto::BarrierGroupResponse>>(promise);
  reply->response().set_counter(group.request().counter());
  auto fail = [reply](int i, const proto::CoordinatedTask& task, const absl::Status& status) {
    proto::BarrierGroupFailure& failure = reply->Fail(i, task, status);
    failure.set_barrier_counter(GetBarrierCounter(status));
    if (auto failed = FailedTaskOf(status)) *failure.mutable_failed_task() = *std::move(failed);
  };
  for (int i = 0; i < group.sources_size(); ++i) {
    const proto::CoordinatedTask& task = group.sources(i);
    proto::BarrierRequest request = group.request();
    *request.mutable_source_task() = task;
    if (!own[i].ok()) {
      fail(i, task, MakeBarrierError(own[i], request.barrier_id(), request.counter()));
      continue;
    }
    BarrierRoute route = ResolveBarrier(self, &request);
    if (route.action == BarrierRoute::Action::kReply) {
      if (route.reply.ok()) {
        reply->response().set_counter(route.reply->counter());
      } else {
        fail(i, task, route.reply.status());
      }
      continue;
    }
    reply->Expect();
    self->request(route.actor, caf::infinite, std::move(request))
        .then(
            [reply](const proto::BarrierResponse& response) {
              reply->response().set_counter(response.counter());
              reply->Done();
            },
            [fail, reply, i, task](caf::error& error) {
              fail(i, task, ToStatus(error));
              reply->Done();
            });
  }
  reply->Done();
  return promise;
}

caf::result<proto::CancelBarrierResponse> RouteCancelBarrier(
    CoordinatorPointer self, const proto::CancelBarrierRequest& request) {
  if (absl::Status own = ActsAsItself(self, request.source_task()); !own.ok()) {
    return CancelBarrierReply(own);
  }
  CancelBarrierRoute route = self->state.barriers.RouteCancel(request);
  if (route.action == CancelBarrierRoute::Action::kReply) return CancelBarrierReply(route.reply);
  return self->delegate(route.actor, request);
}

BarrierRegistry NewBarrierRegistry(const CoordinatorState& state) {
  absl::flat_hash_set<std::string> one_time;
  for (const auto& id : {state.service.register_id, state.service.shutdown_id}) {
    if (!id.empty()) one_time.insert(id);
  }
  const auto& config = state.options.config;
  BarrierLimits limits;
  if (config.max_barrier_id_bytes() > 0) limits.max_id_bytes = config.max_barrier_id_bytes();
  if (config.max_barrier_ids() > 0) limits.max_ids = config.max_barrier_ids();
  return BarrierRegistry(std::move(one_time), limits);
}

void OnBarrierDone(CoordinatorPointer self, const std::string& id, int64_t counter,
                   const caf::error& result, const proto::BarrierInfo& end) {
  auto& st = self->state;
  // An instance of an earlier round (its registry was replaced when every task restarted).
  const caf::strong_actor_ptr& sender = self->current_sender();
  if (!st.barriers.IsLive(id, counter, sender ? sender->address() : caf::actor_addr{})) return;
  absl::Status status = ToStatus(result);
  if (EventsWanted(self)) EmitEvent(self, BarrierDoneEvent(id, counter, status, end));
  BarrierActor actor = st.barriers.Finish(id, counter, status);
  if (actor) self->send_exit(actor, caf::exit_reason::user_shutdown);
  if (id == st.service.register_id && !status.ok()) {
    SetAllTasksError(self, MakeCoordinationError(absl::InternalError(absl::StrCat(
                               "Cluster registration failed with error: ", StatusText(status)))));
  } else if (id == st.service.shutdown_id) {
    if (status.ok()) {
      for (const auto& task : ShutdownParticipants(self)) {
        SendTaskEvent(self, st.tasks.SlotOf(task).actor, TaskEvent::kDisconnect);
      }
    } else {
      // The tasks waiting in the barrier learn the failure from their ShutdownTask reply.
      absl::Status failed = ShutdownFailedFor(self, status);
      PropagateToAll(self, failed, st.service.shutdown_arrived);
      SetAllTasksError(self, failed);
    }
    st.service.shutdown_arrived.clear();
  }
}

caf::result<proto::RegisterTaskResponse> RegisterThroughBarrier(
    CoordinatorPointer self, const TaskActor& task, const proto::RegisterTaskRequest& request,
    const AgentActor& agent) {
  // After the register barrier failed, a late task learns why: the barrier's own error, which
  // names every task that never registered.
  if (auto failed = self->state.barriers.LastResult(self->state.service.register_id);
      failed && !failed->ok()) {
    return ToError(*failed);
  }
  // The task actor joins, arrives at the barrier itself and answers once it passed (see
  // TaskActor's reg_join): the coordinator keeps no request of its own per waiting task, which
  // CAF 0.17 would search linearly for each answer.
  auto& st = self->state;
  proto::BarrierRequest barrier = ServiceBarrier(
      st.service.register_id, st.service.register_timeout, request.source_task(), {});
  return self->delegate(task, reg_join_atom::value, request, agent, std::move(barrier));
}

caf::result<proto::ShutdownTaskResponse> ShutdownThroughBarrier(
    CoordinatorPointer self, const proto::ShutdownTaskRequest& request) {
  auto& st = self->state;
  proto::BarrierRequest barrier =
      ServiceBarrier(st.service.shutdown_id, st.service.shutdown_timeout, request.source_task(),
                     ShutdownParticipants(self));
  st.service.shutdown_arrived.insert(TaskName(request.source_task()));
  auto promise = self->make_response_promise<proto::ShutdownTaskResponse>();
  self->request(caf::actor_cast<CoordinatorActor>(self), caf::infinite, std::move(barrier))
      .then(
          [=](const proto::BarrierResponse&) mutable {
            promise.deliver(proto::ShutdownTaskResponse{});
          },
          [=](caf::error& error) mutable {
            promise.deliver(ToError(ShutdownFailed(ToStatus(error))));
          });
  return promise;
}

}  // namespace muster
