#include "muster/actors/tasks/task_actor.h"

#include <chrono>
#include <optional>

#include <absl/strings/str_cat.h>

#include "muster/actors/caf/answer_as.h"
#include "muster/actors/caf/hardening.h"
#include "muster/actors/caf/placement.h"
#include "muster/actors/tasks/task_admission.h"
#include "muster/messages/status/caf_text.h"
#include "muster/messages/status/cut_text.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

// TaskSpec without the task and initial state, which live in TaskState::info.
struct TaskSettings {
  uint64_t leader_incarnation = 0;
  caf::timespan heartbeat_timeout{0};
  caf::timespan connection_loss_grace{0};
  bool recoverable = false;
  uint16_t direct_port = 0;
  TaskParentActor parent;
};

struct TaskState {
  static inline const char* name = "muster.task";
  TaskSettings spec;
  proto::CoordinatedTaskStateInfo info;  // the task's state, as reported to the coordinator
  absl::Status error;                    // the sticky error while in ERROR
  AgentActor agent;
  bool agent_down = false;
  uint64_t agent_watches = 0;  // WatchAgent calls: a kAgentLost timer names the watch it is for
  bool ever_connected = false;
  // While DISCONNECTED, heartbeats of the last incarnation are accepted until then.
  caf::actor_clock::time_point grace_deadline;
  // A registration waiting in the register barrier (JOINING).
  struct Joining {
    uint64_t incarnation = 0;
    AgentActor agent;
    bool agent_down = false;
  };
  std::optional<Joining> joining;
  uint64_t register_joins = 0;  // registrations through the register barrier so far
  // Recovered CONNECTED by a restarted leader; its agent has not registered again yet.
  bool awaiting_reconnect = false;
  caf::timespan reconnect_window{0};
};

using TaskPointer = TaskActor::stateful_pointer<TaskState>;

std::string Name(TaskPointer self) { return TaskName(self->state.info.task()); }

absl::Status ServiceError(TaskPointer self, absl::Status status) {
  return MakeCoordinationError(std::move(status), self->state.info.task());
}

void Notify(TaskPointer self) {
  self->send(self->state.spec.parent, task_state_atom::value, self->state.info, self->state.agent);
}

void SetState(TaskPointer self, proto::CoordinatedTaskState state, const absl::Status& error) {
  auto& info = self->state.info;
  info.set_state(state);
  SetStatusFields(error, &info);
  self->state.error = error;
  Notify(self);
}

void WatchAgent(TaskPointer self, const AgentActor& agent) {
  auto& st = self->state;
  if (st.agent && st.agent != agent) self->demonitor(st.agent.address());
  st.agent = agent;
  st.agent_down = false;
  ++st.agent_watches;
  if (agent) self->monitor(agent);
}

void StopWatching(TaskPointer self) {
  if (self->state.agent) self->demonitor(self->state.agent.address());
}

void Connect(TaskPointer self, uint64_t incarnation, const AgentActor& agent) {
  auto& st = self->state;
  st.awaiting_reconnect = false;
  st.info.set_incarnation(incarnation);
  st.ever_connected = true;
  WatchAgent(self, agent);
  SetState(self, proto::TASKSTATE_CONNECTED, absl::OkStatus());
}

void Disconnect(TaskPointer self) {
  StopWatching(self);
  self->state.grace_deadline = self->clock().now() + self->state.spec.heartbeat_timeout;
  SetState(self, proto::TASKSTATE_DISCONNECTED, absl::OkStatus());
}

// Answers the current request with `result` in the coordinator's name (actors/caf/answer_as.h):
// the coordinator delegates requests about a task here, and the task actor's address never goes
// to another node. Results that are no value or error (delegated) pass as they are.
template <class Response>
caf::result<Response> InParentsName(TaskPointer self, caf::result<Response> result) {
  if (result.flag != caf::rt_value && result.flag != caf::rt_error) return result;
  caf::message reply = result.flag == caf::rt_value ? result.value : caf::make_message(result.err);
  auto parent = caf::actor_cast<caf::strong_actor_ptr>(self->state.spec.parent);
  if (!AnswerAs(self, parent, std::move(reply))) return result;
  return caf::delegated<Response>();
}

// Answers the current request with `status`, then dies with it: the coordinator records the
// failure, applies the supervision policy and restarts this task in ERROR.
template <class Response>
caf::result<Response> ReplyAndFail(TaskPointer self, const absl::Status& reply,
                                   const absl::Status& failure) {
  caf::result<Response> answer =
      reply.ok() ? caf::result<Response>(Response{}) : caf::result<Response>(ToError(reply));
  answer = InParentsName(self, std::move(answer));
  if (answer.flag == caf::rt_delegated) {
    self->quit(ToError(failure));
    return answer;
  }
  auto promise = self->make_response_promise<Response>();
  if (reply.ok()) {
    promise.deliver(Response{});
  } else {
    promise.deliver(ToError(reply));
  }
  self->quit(ToError(failure));
  return promise;
}

proto::RegisterTaskResponse RegisterOk(TaskPointer self) {
  proto::RegisterTaskResponse response;
  response.set_leader_incarnation(self->state.spec.leader_incarnation);
  response.set_heartbeat_timeout_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(self->state.spec.heartbeat_timeout)
          .count());
  response.set_direct_port(self->state.spec.direct_port);
  return response;
}

uint64_t PendingIncarnation(TaskPointer self) {
  return self->state.joining ? self->state.joining->incarnation : 0;
}

bool MayRejoinFromError(TaskPointer self) {
  return muster::MayRejoinFromError(self->state.spec.recoverable, self->state.error);
}

caf::result<proto::RegisterTaskResponse> Register(TaskPointer self,
                                                  const proto::RegisterTaskRequest& request,
                                                  const AgentActor& agent) {
  auto& st = self->state;
  if (absl::Status taken = MayClaim(self->state.info, PendingIncarnation(self), request);
      !taken.ok())
    return ToError(taken);
  if (request.reconnect()) {
    if (absl::Status refused = MayReconnect(self->state.info, request); !refused.ok())
      return ToError(refused);
  }
  bool same = request.incarnation() == st.info.incarnation();
  if (st.info.state() == proto::TASKSTATE_CONNECTED && !same && !st.spec.recoverable) {
    absl::Status aborted = ServiceError(
        self, absl::AbortedError(absl::StrCat(
                  Name(self), " unexpectedly tried to connect with a different incarnation (",
                  request.incarnation(), ", registered: ", st.info.incarnation(),
                  "). It has likely restarted; the cluster is told of the failure.")));
    return ReplyAndFail<proto::RegisterTaskResponse>(self, aborted, aborted);
  }
  if (st.info.state() == proto::TASKSTATE_ERROR && !MayRejoinFromError(self)) {
    return ToError(ServiceError(
        self, absl::AbortedError(absl::StrCat(
                  Name(self),
                  " unexpectedly tried to connect while it is already in error. Reset it before "
                  "it connects again: run `muster task reset --leader HOST:PORT ",
                  Name(self),
                  "` (HOST:PORT: this leader's address), or call Reset() (Python: reset()) on "
                  "the agent that registered it. Existing error: ",
                  StatusText(st.error)))));
  }
  Connect(self, request.incarnation(), agent);
  return RegisterOk(self);
}

void ForgetJoining(TaskPointer self) {
  auto& joining = self->state.joining;
  if (joining && joining->agent) self->demonitor(joining->agent.address());
  joining.reset();
}

// The first step of a registration through the register barrier: the incarnation (and its
// agent) become pending; a newer one replaces it. A connected task re-registers as usual.
caf::result<proto::RegisterTaskResponse> JoinRegistration(TaskPointer self,
                                                          const proto::RegisterTaskRequest& request,
                                                          const AgentActor& agent) {
  auto& st = self->state;
  if (absl::Status taken = MayClaim(self->state.info, PendingIncarnation(self), request);
      !taken.ok())
    return ToError(taken);
  if (st.info.state() == proto::TASKSTATE_CONNECTED || request.reconnect() ||
      (st.info.state() == proto::TASKSTATE_ERROR && !MayRejoinFromError(self))) {
    return Register(self, request, agent);
  }
  ForgetJoining(self);
  st.joining = TaskState::Joining{request.incarnation(), agent, false};
  if (agent) self->monitor(agent);
  return RegisterOk(self);
}

absl::Status ConnectionLost(TaskPointer self, const caf::error& reason);

absl::Status FailedWhileWaiting(const proto::CoordinatedTask& task, const absl::Status& error) {
  return MakeCoordinationError(
      absl::AbortedError(absl::StrCat(
          TaskName(task), " failed while it waited for the register barrier: ", StatusText(error),
          ". Reset it and register again.")),
      task);
}

absl::Status NewerIncarnationJoined(TaskPointer self) {
  return ServiceError(self, absl::AlreadyExistsError("Aborted connect attempt as there is a "
                                                     "request from a newer incarnation."));
}

// The register barrier passed for `incarnation`: connect it if it is still the pending one.
// Returns the caller's answer; sets `*fail` when the task fails once it is given (its agent was
// lost while it waited).
absl::StatusOr<proto::RegisterTaskResponse> FinishRegistration(TaskPointer self,
                                                               uint64_t incarnation, bool* fail) {
  auto& st = self->state;
  if (st.joining && st.joining->incarnation == incarnation) {
    TaskState::Joining joining = *st.joining;
    ForgetJoining(self);
    if (joining.agent_down) {
      *fail = true;
      return ConnectionLost(self, caf::exit_reason::remote_link_unreachable);
    }
    Connect(self, incarnation, joining.agent);
    return RegisterOk(self);
  }
  if (st.info.state() == proto::TASKSTATE_CONNECTED && st.info.incarnation() == incarnation) {
    return RegisterOk(self);
  }
  if (st.info.state() == proto::TASKSTATE_ERROR)
    return FailedWhileWaiting(st.info.task(), st.error);
  return NewerIncarnationJoined(self);
}

caf::message AnswerOf(const absl::StatusOr<proto::RegisterTaskResponse>& answer) {
  return answer.ok() ? caf::make_message(*answer) : caf::make_message(ToError(answer.status()));
}

// A registration through the register barrier: join (the task stays DISCONNECTED with a
// pending incarnation), arrive at the barrier, and connect once it passed. The task actor
// itself waits for the barrier (one request of its own; the coordinator waits for none) and
// answers the caller in the coordinator's name. A newer join of the same task replaces this
// one: the barrier cancels this arrival and this caller gets AlreadyExists.
caf::result<proto::RegisterTaskResponse> RegisterThroughBarrier(
    TaskPointer self, const proto::RegisterTaskRequest& request, const AgentActor& agent,
    proto::BarrierRequest barrier) {
  caf::result<proto::RegisterTaskResponse> joined = JoinRegistration(self, request, agent);
  if (joined.flag != caf::rt_value) return InParentsName(self, std::move(joined));
  auto answer = std::make_shared<DeferredAnswer>(
      DeferredAnswer::Take(self, caf::actor_cast<caf::strong_actor_ptr>(self->state.spec.parent)));
  if (!answer->pending()) return joined;  // no caller waits for an answer
  // Should the task actor fail while it waits, the caller learns why.
  self->attach_functor([answer, task = self->state.info.task()](const caf::error& reason) {
    answer->Deliver(nullptr,
                    caf::make_message(ToError(FailedWhileWaiting(task, ToStatus(reason)))));
  });
  const uint64_t join = ++self->state.register_joins;
  const uint64_t incarnation = request.incarnation();
  self->request(self->state.spec.parent, caf::infinite, std::move(barrier))
      .then(
          [self, answer, incarnation](const proto::BarrierResponse&) {
            bool fail = false;
            absl::StatusOr<proto::RegisterTaskResponse> done =
                FinishRegistration(self, incarnation, &fail);
            answer->Deliver(self->context(), AnswerOf(done));
            if (fail) self->quit(ToError(done.status()));
          },
          [self, answer, join](caf::error& error) {
            if (self->state.register_joins != join) error = ToError(NewerIncarnationJoined(self));
            answer->Deliver(self->context(), caf::make_message(std::move(error)));
          });
  return caf::delegated<proto::RegisterTaskResponse>();
}

caf::result<proto::HeartbeatResponse> NotRegistered(TaskPointer self) {
  return ToError(ServiceError(
      self, absl::InvalidArgumentError(absl::StrCat(
                "Task with task=", Name(self),
                " must be registered before sending heartbeat messages. "
                "The service might have restarted, please restart / reset and register again."))));
}

caf::result<proto::HeartbeatResponse> HeartbeatMismatch(TaskPointer self, uint64_t incarnation) {
  absl::Status aborted = ServiceError(
      self,
      absl::AbortedError(absl::StrCat(Name(self), " Heartbeat: Incarnation ID mismatch: expecting ",
                                      self->state.info.incarnation(), " but got ", incarnation,
                                      ". The task has restarted and likely crashed earlier; the "
                                      "cluster is told of the failure.")));
  return ReplyAndFail<proto::HeartbeatResponse>(self, aborted, aborted);
}

caf::result<proto::HeartbeatResponse> Heartbeat(TaskPointer self,
                                                const proto::HeartbeatRequest& request) {
  auto& st = self->state;
  proto::HeartbeatResponse ok;
  ok.set_leader_incarnation(st.spec.leader_incarnation);
  bool same = request.incarnation() == st.info.incarnation();
  switch (st.info.state()) {
    case proto::TASKSTATE_ERROR:
      return ToError(ServiceError(
          self, absl::AbortedError(absl::StrCat(
                    "Unexpected heartbeat request from an already-in-error task: ", Name(self),
                    " with existing error: ", StatusText(st.error),
                    ". Reset the task and register again."))));
    case proto::TASKSTATE_CONNECTED:
      // The heartbeat monitor answers the beats of the connected incarnation; one that reaches
      // the task actor raced with the monitor learning of the registration.
      if (same || st.spec.recoverable) return ok;
      return HeartbeatMismatch(self, request.incarnation());
    default:
      if (!st.ever_connected || !same || self->clock().now() > st.grace_deadline) {
        return NotRegistered(self);
      }
      return ok;
  }
}

template <class Response>
caf::result<Response> DisconnectRequest(TaskPointer self) {
  if (self->state.info.state() == proto::TASKSTATE_DISCONNECTED) {
    return ToError(ServiceError(self, absl::FailedPreconditionError(absl::StrCat(
                                          "The task is already disconnected: ", Name(self)))));
  }
  Disconnect(self);
  return Response{};
}

caf::result<proto::ReportErrorToServiceResponse> ReportError(
    TaskPointer self, const proto::ReportErrorToServiceRequest& request) {
  if (self->state.info.state() != proto::TASKSTATE_CONNECTED) {
    return ToError(ServiceError(self, absl::FailedPreconditionError(absl::StrCat(
                                          "The task ", Name(self),
                                          " is not connected or already has an error; register it "
                                          "before reporting errors."))));
  }
  int code = request.error_code();
  if (code <= 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    code = static_cast<int>(absl::StatusCode::kUnknown);
  }
  absl::Status reported =
      MakeCoordinationError(absl::Status(static_cast<absl::StatusCode>(code),
                                         CutText(request.error_message(), kMaxReportedErrorBytes)),
                            self->state.info.task(), /*is_reported_error=*/true);
  return ReplyAndFail<proto::ReportErrorToServiceResponse>(self, absl::OkStatus(), reported);
}

absl::Status HeartbeatTimeout(TaskPointer self) {
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(self->state.spec.heartbeat_timeout);
  return ServiceError(
      self, absl::UnavailableError(absl::StrCat(
                "Task ", Name(self), " heartbeat timeout: no heartbeat for ", ms.count(),
                " ms. This indicates that the task has failed, got preempted, is frozen, or lost "
                "its network; restart it (or reset it if its job is recoverable).")));
}

// The heartbeat monitor saw the deadline of `incarnation` pass.
void OnDeadline(TaskPointer self, uint64_t incarnation) {
  const auto& info = self->state.info;
  if (info.state() == proto::TASKSTATE_CONNECTED && info.incarnation() == incarnation) {
    self->quit(ToError(HeartbeatTimeout(self)));
  }
}

void SetError(TaskPointer self, const caf::error& error) {
  if (self->state.info.state() == proto::TASKSTATE_ERROR) return;  // the first error sticks
  ForgetJoining(self);
  StopWatching(self);
  SetState(self, proto::TASKSTATE_ERROR, ToStatus(error));
}

// The worker's process as a message names it: "host 10.0.0.5 pid 4242".
std::string WorkerOf(TaskPointer self) {
  const auto& agent = self->state.agent;
  return agent ? PeerName(agent.node()) : std::string("its process");
}

absl::Status ConnectionLost(TaskPointer self, const caf::error& reason) {
  return ServiceError(
      self,
      absl::UnavailableError(absl::StrCat(
          "Task ", Name(self), ": connection to worker lost (", WorkerOf(self), ": ",
          DescribeCafError(reason),
          "). Its process exited or the network failed; restart it (or reset it if its job is "
          "recoverable).")));
}

void OnAgentDown(TaskPointer self, const caf::down_msg& down) {
  auto& st = self->state;
  if (st.joining && st.joining->agent && down.source == st.joining->agent.address()) {
    st.joining->agent_down = true;  // judged when the register barrier passes
    return;
  }
  if (!st.agent || down.source != st.agent.address() ||
      st.info.state() != proto::TASKSTATE_CONNECTED) {
    return;
  }
  if (st.spec.connection_loss_grace <= caf::timespan{0}) {
    self->quit(ToError(ConnectionLost(self, down.reason)));
    return;
  }
  st.agent_down = true;
  self->delayed_send(self, st.spec.connection_loss_grace, task_event_atom::value,
                     TaskEvent::kAgentLost, st.agent_watches, caf::error());
}

void OnAgentLost(TaskPointer self, uint64_t watch) {
  auto& st = self->state;
  if (st.agent_down && st.agent && st.agent_watches == watch &&
      st.info.state() == proto::TASKSTATE_CONNECTED) {
    self->quit(ToError(ConnectionLost(self, caf::exit_reason::remote_link_unreachable)));
  }
}

// The reconnect window after a leader restart passed: the task did not come back.
void OnReconnectOver(TaskPointer self, uint64_t incarnation) {
  auto& st = self->state;
  if (!st.awaiting_reconnect || st.info.incarnation() != incarnation ||
      st.info.state() != proto::TASKSTATE_CONNECTED) {
    return;
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(st.reconnect_window);
  self->quit(ToError(ServiceError(
      self, absl::UnavailableError(absl::StrCat(
                "Task ", Name(self),
                " was connected when the leader restarted but did not "
                "reconnect within the reconnect window (",
                ms.count(),
                " ms): its process exited or lost its network while the leader was down; restart "
                "it (or reset it if its job is recoverable).")))));
}

// A TaskEvent (see task_actor.h). The timers' events count only from this actor itself.
void OnEvent(TaskPointer self, TaskEvent event, uint64_t incarnation, const caf::error& error) {
  const auto& info = self->state.info;
  bool own_timer = self->current_sender() == self->ctrl();
  switch (event) {
    case TaskEvent::kSetError:
      SetError(self, error);
      return;
    case TaskEvent::kDisconnect:
      if (info.state() != proto::TASKSTATE_DISCONNECTED) Disconnect(self);
      return;
    case TaskEvent::kHeartbeatDeadline:
      OnDeadline(self, incarnation);
      return;
    case TaskEvent::kStuck:
      if (info.state() == proto::TASKSTATE_CONNECTED && info.incarnation() == incarnation) {
        self->quit(error);
      }
      return;
    case TaskEvent::kAgentLost:
      if (own_timer) OnAgentLost(self, incarnation);
      return;
    case TaskEvent::kReconnectOver:
      if (own_timer) OnReconnectOver(self, incarnation);
      return;
  }
}

absl::Status StatusFromInfo(const proto::CoordinatedTaskStateInfo& info) {
  if (info.state() != proto::TASKSTATE_ERROR) return absl::OkStatus();
  return StatusFromFields(info);
}

TaskActor::behavior_type TaskBehavior(TaskPointer self, TaskSpec spec) {
  HostOnNetworkThread(self);
  DropUnexpectedMessages(self);
  auto& st = self->state;
  st.spec = {.leader_incarnation = spec.leader_incarnation,
             .heartbeat_timeout = spec.heartbeat_timeout,
             .connection_loss_grace = spec.connection_loss_grace,
             .recoverable = spec.recoverable,
             .direct_port = spec.direct_port,
             .parent = std::move(spec.parent)};
  st.info = std::move(spec.initial);
  *st.info.mutable_task() = std::move(spec.task);  // one copy of the task and its state
  st.error = StatusFromInfo(st.info);
  st.ever_connected = st.info.incarnation() != 0;
  if (st.info.state() == proto::TASKSTATE_CONNECTED && spec.reconnect_window > caf::timespan{0}) {
    st.awaiting_reconnect = true;
    st.reconnect_window = spec.reconnect_window;
    self->delayed_send(self, spec.reconnect_window, task_event_atom::value,
                       TaskEvent::kReconnectOver, st.info.incarnation(), caf::error());
  }
  self->set_down_handler([=](caf::down_msg& down) { OnAgentDown(self, down); });
  return {
      // Requests that the coordinator (or its heartbeat monitor) delegates here: answered in
      // the coordinator's name (InParentsName).
      [=](const proto::RegisterTaskRequest& request, const AgentActor& agent) {
        return InParentsName(self, Register(self, request, agent));
      },
      [=](reg_join_atom, const proto::RegisterTaskRequest& request, const AgentActor& agent,
          proto::BarrierRequest& barrier) {
        return RegisterThroughBarrier(self, request, agent, std::move(barrier));
      },
      [=](const proto::HeartbeatRequest& request) {
        return InParentsName(self, Heartbeat(self, request));
      },
      [=](const proto::ShutdownTaskRequest&) {
        return InParentsName(self, DisconnectRequest<proto::ShutdownTaskResponse>(self));
      },
      [=](const proto::ResetTaskRequest&) {
        return InParentsName(self, DisconnectRequest<proto::ResetTaskResponse>(self));
      },
      [=](const proto::ReportErrorToServiceRequest& request) {
        return InParentsName(self, ReportError(self, request));
      },
      [=](exited_atom, const caf::error& error) -> caf::result<bool> {
        if (self->state.info.state() == proto::TASKSTATE_ERROR) return false;
        auto promise = self->make_response_promise<bool>();
        promise.deliver(true);
        self->quit(error);
        return promise;
      },
      [=](task_event_atom, TaskEvent event, uint64_t incarnation, const caf::error& error) {
        OnEvent(self, event, incarnation, error);
      },
  };
}

}  // namespace

TaskActor SpawnTaskActor(caf::actor_system& system, TaskSpec spec) {
  return system.spawn(TaskBehavior, std::move(spec));
}

}  // namespace muster
