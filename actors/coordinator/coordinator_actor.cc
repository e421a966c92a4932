#include "muster/actors/coordinator/coordinator_actor.h"

#include <algorithm>
#include <tuple>

#include <absl/strings/str_cat.h>

#include "muster/actors/barriers/barrier_actor.h"
#include "muster/actors/caf/hardening.h"
#include "muster/actors/caf/placement.h"
#include "muster/actors/coordinator/coordinator_state.h"
#include "muster/actors/kv/store/kv_stats.h"
#include "muster/messages/incarnation.h"
#include "muster/messages/status/caf_text.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/messages/vocabulary/kv_calls.h"

namespace muster {
namespace {

constexpr int64_t kDefaultHeartbeatTimeoutMs = 10'000;

// The task actor of `task`, or an InvalidArgument error naming it.
absl::StatusOr<TaskActor> Route(CoordinatorPointer self, absl::string_view what,
                                const proto::CoordinatedTask& task) {
  const TaskSlot* slot = self->state.tasks.Find(task);
  if (slot == nullptr) return UnknownTaskError(what, task);
  return slot->actor;
}

caf::result<proto::WaitForAllTasksResponse> WaitForAllTasks(
    CoordinatorPointer self, const proto::WaitForAllTasksRequest& request) {
  auto& st = self->state;
  const auto* info = st.tasks.view().Find(request.source_task());
  if (info == nullptr) {
    return ToError(UnknownTaskError("WaitForAllTasks from unknown task ", request.source_task()));
  }
  if (absl::Status own = ActsAsItself(self, request.source_task()); !own.ok()) {
    return ToError(own);
  }
  if (info->state() != proto::TASKSTATE_CONNECTED) {
    return ToError(MakeCoordinationError(absl::FailedPreconditionError(
        absl::StrCat("WaitForAllTasks from ", TaskName(request.source_task()),
                     ", which is not connected; register it first."))));
  }
  if (!st.elastic.empty()) {
    return ToError(MakeCoordinationError(absl::FailedPreconditionError(absl::StrCat(
        "WaitForAllTasks from ", TaskName(request.source_task()), ": job ",
        st.elastic.begin()->first,
        " is elastic, so not every configured task takes part and WaitForAllTasks, which waits "
        "for all of them, cannot complete; its tasks call WaitForMembership to learn which do"))));
  }
  auto promise = self->make_response_promise<proto::WaitForAllTasksResponse>();
  st.devices->Join(st.tasks.view(), request, promise);
  return promise;
}

// Forwards a request about one task to its task actor, and answers with its reply. The sender
// must act as itself (ActsAsItself) unless `any_sender`.
template <class Response, class Request, class... Extra>
caf::result<Response> ToTask(CoordinatorPointer self, bool any_sender, absl::string_view what,
                             const proto::CoordinatedTask& task, const Request& request,
                             const Extra&... extra) {
  auto actor = Route(self, what, task);
  if (!actor.ok()) return ToError(actor.status());
  if (!any_sender) {
    if (absl::Status own = ActsAsItself(self, task); !own.ok()) return ToError(own);
  }
  // A task actor that failed a moment ago (e.g. after its ReportError) may still be in the slot
  // until its exit is handled: a request it can no longer take is routed once more, to the
  // task actor that replaced it.
  auto promise = self->make_response_promise<Response>();
  auto first = *actor;
  std::string name(what);
  self->request(first, caf::infinite, request, extra...)
      .then([promise](Response& response) mutable { promise.deliver(std::move(response)); },
            [=](caf::error& error) mutable {
              auto again = error == caf::sec::request_receiver_down
                               ? Route(self, name, task)
                               : absl::StatusOr<decltype(first)>(absl::UnknownError(""));
              if (!again.ok() || *again == first) {
                promise.deliver(error);
                return;
              }
              self->request(*again, caf::infinite, request, extra...)
                  .then([promise](Response& r) mutable { promise.deliver(std::move(r)); },
                        [promise](caf::error& e) mutable { promise.deliver(std::move(e)); });
            });
  return promise;
}

// A task in ERROR may be reset from any node admitted to the job (`muster task reset`: the
// process that registered it is usually gone, and a restarted one runs on another node), and so
// may a DISCONNECTED one (which gets FailedPrecondition); a CONNECTED task only by the process
// on which it registered.
caf::result<proto::ResetTaskResponse> ResetTask(CoordinatorPointer self,
                                                const proto::ResetTaskRequest& request) {
  const auto* info = self->state.tasks.view().Find(request.source_task());
  bool any_sender = info != nullptr && info->state() != proto::TASKSTATE_CONNECTED;
  return ToTask<proto::ResetTaskResponse>(
      self, any_sender, "Unexpected reset request with task=", request.source_task(), request);
}

// The coordinator's own messages (a task actor's state, a barrier's end, its progress timer)
// come from its children and itself, in this process. Another node that sends one is refused:
// it could otherwise mark any task failed, or put its own actor in place of a task's agent.
caf::error NotFromThisNode(CoordinatorPointer self, const char* what) {
  if (FromThisNode(self)) return caf::error{};
  const caf::strong_actor_ptr& sender = self->current_sender();
  return ToError(absl::PermissionDeniedError(
      absl::StrCat("the coordinator's internal message ", what, " was sent from another node (",
                   sender ? PeerName(sender->node()) : std::string("anonymous"),
                   "); other nodes may only send requests")));
}

// A registration may not take over a live task silently: its agent must be the sender's own
// actor, and a task connected from one node cannot be registered with the same incarnation from
// another (a restarted task brings a new incarnation, which the reference's rules handle).
absl::Status MayTakeOver(CoordinatorPointer self, const proto::RegisterTaskRequest& request,
                         const AgentActor& agent) {
  const caf::strong_actor_ptr& sender = self->current_sender();
  if (!sender || sender->node() == self->node()) return absl::OkStatus();  // in this process
  const std::string name = TaskName(request.source_task());
  if (agent && agent.node() != sender->node()) {
    return absl::PermissionDeniedError(
        absl::StrCat("RegisterTask of ", name, " names an agent on node ", PeerName(agent.node()),
                     " but came from node ", PeerName(sender->node()),
                     "; a node registers only its own agents"));
  }
  const TaskSlot& slot = self->state.tasks.SlotOf(request.source_task());
  const auto* info = self->state.tasks.view().Find(request.source_task());
  // A task recovered CONNECTED by a restarted leader has no node yet: its agent comes back.
  if (info->state() == proto::TASKSTATE_CONNECTED && slot.agent_node != caf::node_id{} &&
      slot.agent_node != sender->node() && info->incarnation() == request.incarnation()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "Task ", name, " is connected from ", PeerName(slot.agent_node), "; a registration from ",
        PeerName(sender->node()),
        " with its incarnation cannot take it over. A restarted task registers with a new "
        "incarnation."));
  }
  return absl::OkStatus();
}

caf::result<proto::RegisterTaskResponse> RegisterTask(CoordinatorPointer self,
                                                      const proto::RegisterTaskRequest& request,
                                                      const AgentActor& agent) {
  auto& st = self->state;
  if (request.source_task().recoverable())
    st.tasks.view().SetRecoverable(request.source_task(), true);
  auto actor = Route(self, "Unexpected task registered with task=", request.source_task());
  if (!actor.ok()) return ToError(actor.status());
  if (absl::Status own = MayTakeOver(self, request, agent); !own.ok()) return ToError(own);
  if (absl::Status current = IsCurrentGeneration(self, request); !current.ok()) {
    return ToError(current);
  }
  if (!st.service.register_id.empty()) return RegisterThroughBarrier(self, *actor, request, agent);
  // The task actor answers in the coordinator's name (actors/caf/answer_as.h).
  if (!st.records.gate().enabled()) return self->delegate(*actor, request, agent);
  // With a state dir the task's new state is recorded (its task_state message arrives before
  // the task actor's answer) before the registration is acknowledged.
  auto promise = self->make_response_promise<proto::RegisterTaskResponse>();
  self->request(*actor, caf::infinite, request, agent)
      .then(
          [self, promise](proto::RegisterTaskResponse& response) mutable {
            self->state.records.gate().Deliver(promise, std::move(response));
          },
          [self, promise](caf::error& error) mutable {
            // A refusal reveals the task's state too (e.g. ERROR): once that is durable, and
            // never from a leader whose write failed and pauses it (an HA leader that woke
            // after losing its lease: the agent then registers with the next leader).
            AnswerOnceDurable(self, promise, std::move(error));
          });
  return promise;
}

caf::result<proto::ShutdownTaskResponse> ShutdownTask(CoordinatorPointer self,
                                                      const proto::ShutdownTaskRequest& request) {
  auto& st = self->state;
  auto actor = Route(self, "Unexpected disconnect request with task=", request.source_task());
  if (!actor.ok()) return ToError(actor.status());
  if (absl::Status own = ActsAsItself(self, request.source_task()); !own.ok()) {
    return ToError(own);
  }
  if (st.service.shutdown_id.empty() || st.tasks.view().IsRecoverable(request.source_task())) {
    return self->delegate(*actor, request);
  }
  return ShutdownThroughBarrier(self, request);
}

// Routes a key-value call to its directory. A write that may be ephemeral (it has an owner
// incarnation) gets its owner from the coordinator's own view, never from the wire.
template <class Request>
caf::result<KvResponse<Request>> RouteKv(CoordinatorPointer self, Request request) {
  if (caf::error refused = Fenced(self)) return refused;
  if constexpr (requires { request.set_owner_incarnation(uint64_t{0}); }) {
    absl::StatusOr<uint64_t> owner =
        EphemeralOwner(self, request.ephemeral(), request.source_task());
    if (!owner.ok()) return ToKvError(owner.status());
    request.set_owner_incarnation(*owner);
  }
  return RouteKvRequest(self, self->state.kv, std::move(request));
}

// `handler()` unless the current message comes from a process a restart replaced (Fenced).
template <class Response, class Handler>
caf::result<Response> Unfenced(CoordinatorPointer self, Handler handler) {
  if (caf::error refused = Fenced(self)) return refused;
  return handler();
}

// The handlers of every call of MUSTER_KV_CALLS (kv_calls.h), as a tuple.
auto KvCalls(CoordinatorPointer self) {
#define MUSTER_COORDINATOR_KV_CALL(Verb, label) \
  std::make_tuple([self](const proto::Verb##Request& r) { return RouteKv(self, r); }),
  return std::tuple_cat(MUSTER_KV_CALLS(MUSTER_COORDINATOR_KV_CALL) std::tuple<>());
#undef MUSTER_COORDINATOR_KV_CALL
}

void Init(CoordinatorPointer self, CoordinatorOptions options) {
  HostOnNetworkThread(self);
  DropErrorMessages(self);
  DropUnexpectedMessages(self);
  auto& st = self->state;
  if (options.incarnation == 0) options.incarnation = NewIncarnation();
  if (!options.policy) {
    const auto& jobs = options.config.recoverable_jobs();
    options.policy = DefaultPolicy({jobs.begin(), jobs.end()});
  }
  int64_t beat_ms = options.config.heartbeat_timeout_in_ms();
  st.heartbeat_timeout =
      std::chrono::milliseconds(beat_ms > 0 ? beat_ms : kDefaultHeartbeatTimeoutMs);
  st.connection_loss_grace = std::chrono::milliseconds(
      std::max<int64_t>(0, options.config.connection_loss_grace_period_in_ms()));
  const auto& config = options.config;
  st.tasks = TaskTable(ClusterView(config));
  st.ephemeral = EphemeralOwners(st.tasks.size());
  st.launchers = LauncherRegistry(st.tasks.size());
  if (config.cluster_register_with_barrier()) {
    st.service.register_id = "[Init]Wait_for_all_tasks_to_register";
    int64_t ms = config.cluster_register_timeout_in_ms();
    st.service.register_timeout = ms > 0 ? caf::timespan{std::chrono::milliseconds(ms)}
                                         : caf::timespan{std::chrono::hours(1)};
  }
  if (config.shutdown_barrier_timeout_in_ms() > 0) {
    st.service.shutdown_id = absl::StrCat("Shutdown::", options.incarnation);
    st.service.shutdown_timeout =
        std::chrono::milliseconds(config.shutdown_barrier_timeout_in_ms());
  }
  st.devices.emplace(options.device_aggregator, options.incarnation);
  st.options = std::move(options);
  st.barriers = NewBarrierRegistry(st);  // after the options: it reads their limits
  st.heartbeats = SpawnHeartbeatMonitor(self, st.options.incarnation, st.heartbeat_timeout);
  st.children->emplace(st.heartbeats.address(), caf::actor_cast<caf::actor>(st.heartbeats));
  InitElasticJobs(self);
  RegisterTaskStateListeners(self);
  // A task recovered CONNECTED has the reconnect window to come back (see TaskSpec).
  caf::timespan window = RestoreCoordinator(self);
  for (const auto& task : st.tasks.view().tasks()) {
    // An elastic job's task may leave and come back: its job shrinks and grows instead.
    if (st.options.policy->IsRecoverable(task) || st.elastic.contains(task.job_name())) {
      st.tasks.view().SetRecoverable(task, true);
    }
    SpawnTask(self, task, *st.tasks.view().Find(task), window);
  }
  RestoreGenerations(self);
  st.kv = NewKvRouter(self);  // with the directories a restarted leader recovered
  StartProgressChecks(self);
  if (EventsWanted(self)) EmitEvent(self, LeaderStartedEvent(st.options));
  self->set_down_handler([=](caf::down_msg& down) {
    self->state.children->erase(down.source);  // a dead child needs no stopping at shutdown
    if (!self->state.kv.Forget(down.source) && !self->state.launchers.Forget(down.source)) {
      OnChildDown(self, down);
    }
  });
  StopChildrenOnExit(self);
}

CoordinatorActor::behavior_type CoordinatorBehavior(CoordinatorPointer self,
                                                    CoordinatorOptions options) {
  Init(self, std::move(options));
  // The key-value calls come from KvCalls: kv_calls.h lists them.
  return std::apply(
      [=](auto... kv_calls) -> CoordinatorActor::behavior_type {
        return {
            // A token is checked by the gate in front of a published coordinator (net/); whoever
            // reaches the coordinator itself is in this process or already admitted.
            [=](const proto::AuthenticateRequest&) { return proto::AuthenticateResponse(); },
            [=](const proto::RegisterTaskRequest& request, const AgentActor& agent) {
              return Unfenced<proto::RegisterTaskResponse>(
                  self, [&] { return RegisterTask(self, request, agent); });
            },
            [=](const proto::HeartbeatRequest& request) {
              return Unfenced<proto::HeartbeatResponse>(self,
                                                        [&] { return Heartbeat(self, request); });
            },
            [=](proto::HeartbeatBatchRequest& request) {
              return Unfenced<proto::HeartbeatBatchResponse>(
                  self, [&] { return HeartbeatBatch(self, request); });
            },
            [=](const proto::WaitForAllTasksRequest& request) {
              return Unfenced<proto::WaitForAllTasksResponse>(
                  self, [&] { return WaitForAllTasks(self, request); });
            },
            [=](const proto::ShutdownTaskRequest& request) {
              return Unfenced<proto::ShutdownTaskResponse>(
                  self, [&] { return ShutdownTask(self, request); });
            },
            [=](const proto::ResetTaskRequest& request) {
              return Unfenced<proto::ResetTaskResponse>(self,
                                                        [&] { return ResetTask(self, request); });
            },
            [=](const proto::ReportErrorToServiceRequest& request) {
              return Unfenced<proto::ReportErrorToServiceResponse>(self, [&] {
                return ToTask<proto::ReportErrorToServiceResponse>(
                    self, false, "Unexpected request from task ", request.error_origin(), request);
              });
            },
            [=](const proto::GetTaskStateRequest& request) { return GetTaskState(self, request); },
            [=](const proto::WatchJobStateRequest& request) {
              return WatchJobState(self, request);
            },
            [=](const proto::GetAliveTasksRequest& request) {
              return Unfenced<proto::GetAliveTasksResponse>(
                  self, [&] { return GetAliveTasks(self, request); });
            },
            kv_calls...,
            [=](const proto::WatchKeyRequest& r, const KvWatcherActor& watcher) {
              return Unfenced<proto::WatchKeyResponse>(
                  self, [&] { return RouteKvRequest(self, self->state.kv, r, watcher); });
            },
            [=](const proto::StopWatchKeyRequest& r, const KvWatcherActor& watcher) {
              return RouteKvRequest(self, self->state.kv, r, watcher);
            },
            [=](cancel_atom, const std::string& key) { RouteKvCancel(self, self->state.kv, key); },
            [=](proto::BarrierRequest& request) {
              return Unfenced<proto::BarrierResponse>(
                  self, [&] { return RouteBarrier(self, std::move(request)); });
            },
            [=](const proto::BarrierGroupRequest& group) {
              return Unfenced<proto::BarrierGroupResponse>(
                  self, [&] { return RouteBarrierGroup(self, group); });
            },
            [=](const proto::CancelBarrierRequest& request) {
              return Unfenced<proto::CancelBarrierResponse>(
                  self, [&] { return RouteCancelBarrier(self, request); });
            },
            [=](const proto::GetBarriersRequest&) {
              return CollectBarriers(self, self->state.barriers.LiveActors());
            },
            [=](const proto::GetKvStatsRequest&) {
              return CollectKvStats(self, self->state.kv.Directories());
            },
            [=](const proto::GetTaskColumnsRequest&) { return TaskColumnsOf(self); },
            [=](const proto::GetBarrierProgressRequest& request) {
              return GetBarrierProgress(self, request);
            },
            [=](const proto::NotifyPreemptionRequest& request) {
              return Unfenced<proto::NotifyPreemptionResponse>(
                  self, [&] { return NotifyPreemption(self, request); });
            },
            [=](const proto::WaitForMembershipRequest& request) {
              return Unfenced<proto::WaitForMembershipResponse>(
                  self, [&] { return WaitForMembership(self, request); });
            },
            [=](const proto::GetMembershipRequest& request) {
              return GetMembership(self, request);
            },
            [=](membership_atom, const std::string& job) -> caf::result<void> {
              if (caf::error refused = NotFromThisNode(self, "membership")) return refused;
              OnMembershipTimer(self, job);
              return caf::unit;
            },
            [=](progress_check_atom) -> caf::result<void> {
              if (caf::error refused = NotFromThisNode(self, "progress_check")) return refused;
              CheckProgress(self);
              return caf::unit;
            },
            [=](const proto::RegisterLauncherRequest& request, const LauncherActor& launcher) {
              return RegisterLauncher(self, request, launcher);
            },
            [=](const proto::TaskExitedRequest& request) { return TaskExited(self, request); },
            [=](const proto::LauncherStatusRequest&) { return LauncherStatus(self); },
            [=](const proto::WatchEventsRequest& request) { return WatchEvents(self, request); },
            [=](barrier_done_atom, const std::string& id, int64_t counter, const caf::error& result,
                const proto::BarrierInfo& end) -> caf::result<void> {
              if (caf::error refused = NotFromThisNode(self, "barrier_done")) return refused;
              OnBarrierDone(self, id, counter, result, end);
              return caf::unit;
            },
            [=](task_state_atom, const proto::CoordinatedTaskStateInfo& info,
                const AgentActor& agent) -> caf::result<void> {
              if (caf::error refused = NotFromThisNode(self, "task_state")) return refused;
              OnTaskState(self, info, agent);
              return caf::unit;
            },
        };
      },
      KvCalls(self));
}

}  // namespace

CoordinatorActor SpawnCoordinator(caf::actor_system& system, CoordinatorOptions options) {
  return system.spawn(CoordinatorBehavior, std::move(options));
}

}  // namespace muster
