// The agent actor's lifecycle: connect and register, errors, a lost leader and reset. The
// phases' behaviours are in agent_phases.cc, heartbeats in agent_heartbeat.cc, the wait for a
// lost leader in agent_reconnect.cc, shutdown in agent_shutdown.cc, forwarded requests in
// calls/agent_calls.cc and watches in calls/agent_watches.cc.
#include <algorithm>
#include <string>

#include <absl/strings/str_cat.h>
#include <caf/system_messages.hpp>

#include "muster/actors/caf/placement.h"
#include "muster/messages/incarnation.h"
#include "muster/messages/requests/task_requests.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/actor/calls/agent_forward.h"
#include "muster/net/agent/direct/direct_channel.h"

namespace muster {

const char* AgentStateName(AgentState state) {
  switch (state) {
    case AgentState::kDisconnected:
      return "DISCONNECTED";
    case AgentState::kRunning:
      return "RUNNING";
    case AgentState::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

namespace {

constexpr caf::timespan kConnectMargin = std::chrono::seconds(5);

caf::timespan TimeLeft(AgentPointer self) {
  return std::chrono::duration_cast<caf::timespan>(self->state.connect_deadline -
                                                   self->clock().now());
}

void FinishConnect(AgentPointer self, const absl::StatusOr<proto::RegisterTaskResponse>& result) {
  auto& st = self->state;
  auto promise = std::move(st.connecting);
  st.connecting = {};
  if (!result.ok()) {
    // A refused claim (the task is held) is an answer for the caller, not an error of this
    // agent: it stays DISCONNECTED (no Reset(), which would reach the holder's task, and no
    // on_error) and may Connect() again.
    if (st.config.claim && result.status().code() == absl::StatusCode::kAlreadyExists) {
      EnterPhase(self, AgentPhase::kDisconnected);
    } else {
      SetError(self, result.status());
    }
    promise.deliver(ToError(result.status()));
    return;
  }
  if (absl::Status refused = AdoptHeartbeatTimeout(self, *result); !refused.ok()) {
    // The leader registered the task, which would then fall silent: it fails the task at once,
    // with the reason, instead of judging it stale later.
    proto::ReportErrorToServiceRequest report = requests::ReportErrorToService(refused);
    *report.mutable_error_origin() = st.config.task;
    self->request(st.leader, st.config.rpc_timeout, std::move(report))
        .then([](proto::ReportErrorToServiceResponse&) {}, [](caf::error&) {});
    SetError(self, refused);
    promise.deliver(ToError(refused));
    return;
  }
  st.leader_incarnation = result->leader_incarnation();
  st.error = absl::OkStatus();
  st.direct_port = result->direct_port();
  EnterPhase(self, AgentPhase::kRunning);
  StartHeartbeats(self);
  promise.deliver(*result);
}

void Register(AgentPointer self);

void RetryConnect(AgentPointer self, const absl::Status& status) {
  auto& st = self->state;
  caf::timespan left = TimeLeft(self);
  if (!ShouldRetry(Retryable(status), left)) {
    FinishConnect(self, Retryable(status) ? absl::DeadlineExceededError(absl::StrCat(
                                                "Connect() of ", TaskName(st.config.task),
                                                " to the leader at ", LeaderAddress(self),
                                                " timed out; last error: ", StatusText(status)))
                                          : status);
    return;
  }
  self->delayed_send(self, st.connect_backoff.Next(left), retry_atom::value);
}

void Register(AgentPointer self) {
  auto& st = self->state;
  UseLocalLeader(self);
  if (!st.leader || NeedsToken(self)) {
    // A leader session reaches the leader and presents the job token (as itself: it lives as
    // long as this actor or the leader). Reaching the leader is bounded by the register timeout
    // itself; the margin is for answers.
    LeaderSessionOptions options{.connect = st.config.leader,
                                 .leader = st.leader,
                                 .token = st.config.token,
                                 .deadline = st.connect_deadline};
    options.connect.timeout =
        std::max(TimeLeft(self) - kConnectMargin, caf::timespan{std::chrono::milliseconds(1)});
    OpenLeaderSession(self, std::move(options), [self](LeaderSessionReply reply) {
      if (!reply.status.ok()) {
        // The connector's failure is final; a token the leader did not take may be retried.
        if (reply.failed_in == SessionState::kConnecting) return FinishConnect(self, reply.status);
        return RetryConnect(self, reply.status);
      }
      AdoptSession(self, reply);
      Register(self);
    });
    return;
  }
  proto::RegisterTaskRequest request;
  *request.mutable_source_task() = st.config.task;
  request.set_incarnation(st.config.incarnation);
  if (st.config.generation) request.set_generation(*st.config.generation);
  request.set_claim(st.config.claim);
  self->request(st.leader, std::max(TimeLeft(self), caf::timespan{1}), request,
                caf::actor_cast<AgentActor>(self))
      .then([self](proto::RegisterTaskResponse& response) { FinishConnect(self, response); },
            [self](caf::error& error) { RetryConnect(self, ToStatus(error)); });
}

void OnLeaderDown(AgentPointer self, const caf::down_msg& down) {
  auto& st = self->state;
  if (!st.leader || down.source != st.leader.address()) return;
  DropLeader(self);
  if (Reconnecting(self)) return OnReconnectLeaderDown(self);
  if (CanReconnect(self)) return StartReconnect(self, std::string(ToStatus(down.reason).message()));
  absl::Status lost = absl::UnavailableError(
      absl::StrCat("lost the connection to the Muster leader at ", LeaderAddress(self), " (",
                   ToStatus(down.reason).message(), "); task ", TaskName(st.config.task),
                   " cannot coordinate any more"));
  FailPending(self, lost, /*blocking_only=*/false);
  if (st.connecting.pending()) return RetryConnect(self, lost);
  if (Registered(self)) SetError(self, lost);
}

void OnPushedError(AgentPointer self, const proto::ReportErrorToTaskRequest& report) {
  int code = report.error_code();
  if (code <= 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) code = 2;
  const auto& payload = report.error_payload();
  absl::Status status(static_cast<absl::StatusCode>(code),
                      absl::StrCat("Error reported from ", TaskName(payload.source_task()), ": ",
                                   report.error_message()));
  status = MakeCoordinationError(status, payload.source_task(), payload.is_reported_error());
  // A stuck task's report keeps its TaskStuck (callers tell it from other errors by it).
  if (payload.has_stuck()) status = MakeStuckTaskError(status, payload.stuck());
  SetError(self, status);
}

}  // namespace

std::string LeaderAddress(AgentPointer self) {
  return absl::StrCat(self->state.config.leader.host, ":", self->state.config.leader.port);
}

bool Retryable(const absl::Status& status) {
  if (status.code() == absl::StatusCode::kUnauthenticated ||
      status.code() == absl::StatusCode::kPermissionDenied) {
    return false;  // the token gate's answer: retrying cannot change it
  }
  return !GetCoordinationError(status).has_value() || status.code() == absl::StatusCode::kInternal;
}

void SetError(AgentPointer self, const absl::Status& status) {
  auto& st = self->state;
  if (st.phase == AgentPhase::kError) return;
  if (Reconnecting(self)) {  // e.g. ReportError while the leader is away: no call can reach it now
    StopReconnecting(self);
    FailPending(self,
                absl::UnavailableError(absl::StrCat(
                    "the agent of ", TaskName(st.config.task),
                    " went to ERROR while it waited for its lost leader: ", StatusText(status))),
                /*blocking_only=*/false);
  }
  st.error = status;
  EnterPhase(self, AgentPhase::kError);
  StopHeartbeats(self);
  FailSyncWaiters(self, status);
  if (st.config.on_error) {
    RunUserCallback(self, [on_error = st.config.on_error, status] { on_error(status); });
  }
}

void FailPending(AgentPointer self, const absl::Status& status, bool blocking_only) {
  auto& pending = self->state.pending;
  std::vector<uint64_t> ids;
  for (const auto& [id, call] : pending) {
    if (!blocking_only || call.cancel_on_shutdown) ids.push_back(id);
  }
  caf::error error = ToError(status);
  for (uint64_t id : ids) {
    auto call = std::move(pending.at(id));
    pending.erase(id);
    if (!call.key.empty() && self->state.leader) {
      self->send(self->state.leader, cancel_atom::value, call.key);
    }
    call.fail(error);
  }
}

void CancelGetsOf(AgentPointer self, const caf::actor_addr& caller) {
  auto& pending = self->state.pending;
  std::vector<uint64_t> ids;
  for (const auto& [id, call] : pending) {
    if (call.caller && call.caller == caller) ids.push_back(id);
  }
  for (uint64_t id : ids) {
    auto call = std::move(pending.at(id));
    pending.erase(id);
    bool still_waited = std::any_of(pending.begin(), pending.end(), [&](const auto& other) {
      return other.second.key == call.key;
    });
    if (!still_waited && self->state.leader) {
      self->send(self->state.leader, cancel_atom::value, call.key);
    }
    call.fail(ToError(absl::CancelledError(
        absl::StrCat("GetKeyValue(", call.key, ") was cancelled by its caller"))));
  }
}

absl::Status CheckRequestSize(AgentPointer self, const google::protobuf::Message& request) {
  size_t size = request.ByteSizeLong();
  size_t limit = self->state.config.max_request_bytes;
  if (limit == 0 || size <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat(request.GetDescriptor()->name(), " of ", TaskName(self->state.config.task),
                   " is ", size, " bytes; the leader accepts requests of at most ", limit,
                   " bytes (its --max-frame-size): split or shrink the value"));
}

absl::Status WrongState(AgentPointer self, absl::string_view call) {
  return absl::FailedPreconditionError(
      absl::StrCat(call, " of ", TaskName(self->state.config.task),
                   ": the agent must be RUNNING; it is currently ",
                   AgentStateName(PublicState(self->state.phase)),
                   self->state.phase == AgentPhase::kError
                       ? absl::StrCat(" (", StatusText(self->state.error),
                                      "); call Reset() first (Python: reset())")
                       : ""));
}

absl::Status NotDisconnected(AgentPointer self) {
  const auto& st = self->state;
  const bool connecting = st.phase == AgentPhase::kConnecting || st.connecting.pending();
  return absl::FailedPreconditionError(absl::StrCat(
      "Connect() of ", TaskName(st.config.task), ": the agent must be DISCONNECTED; it is ",
      AgentStateName(PublicState(st.phase)), connecting ? " and already connecting" : ""));
}

caf::result<proto::RegisterTaskResponse> Connect(AgentPointer self) {
  auto& st = self->state;
  // A Connect() still under way after a Reset (a pushed error put it in ERROR meanwhile).
  if (st.connecting.pending()) return ToError(NotDisconnected(self));
  EnterPhase(self, AgentPhase::kConnecting);
  st.connecting = self->make_response_promise<proto::RegisterTaskResponse>();
  // The margin lets the leader's own answer (e.g. the register barrier's DeadlineExceeded,
  // naming the missing tasks) arrive before the agent gives up.
  st.connect_deadline = self->clock().now() + st.config.leader.timeout + kConnectMargin;
  // Each retry waits twice as long as the one before, from twice the initial backoff.
  st.connect_backoff =
      Backoff(std::min(st.config.leader.initial_backoff * 2, st.config.leader.max_backoff),
              st.config.leader.max_backoff);
  Register(self);
  return st.connecting;
}

absl::Status NoLeader(AgentPointer self) {
  return absl::FailedPreconditionError(absl::StrCat(
      "the agent of ", TaskName(self->state.config.task), " has no connection to the leader (",
      AgentStateName(PublicState(self->state.phase)), "); call Connect() first"));
}

absl::Status NotInError(AgentPointer self) {
  const auto& st = self->state;
  return absl::FailedPreconditionError(
      absl::StrCat("Reset() failed: the agent of ", TaskName(st.config.task),
                   " is not in ERROR state; it is ", AgentStateName(PublicState(st.phase)), "."));
}

caf::result<proto::ResetTaskResponse> Reset(AgentPointer self) {
  auto& st = self->state;
  if (!st.leader) {
    EnterPhase(self, AgentPhase::kDisconnected);
    return proto::ResetTaskResponse{};
  }
  return Forward<proto::ResetTaskResponse>(
      self, requests::ResetTask(st.config.task), caf::duration{st.config.rpc_timeout}, {},
      [self](const absl::StatusOr<proto::ResetTaskResponse>& result) {
        if (result.ok() || result.status().code() == absl::StatusCode::kFailedPrecondition) {
          EnterPhase(self, AgentPhase::kDisconnected);
          ForgetPreemption(self);  // a registration learns the leader's protocol again
        }
      });
}

void OnRetry(AgentPointer self) {
  if (self->state.connecting.pending()) Register(self);
}

void RunUserCallback(AgentPointer self, std::function<void()> callback) {
  self->send(self->state.callbacks, UserCallback{std::move(callback)});
}

void AfterUserCallbacks(AgentPointer self, std::function<void()> then) {
  self->request(self->state.callbacks, caf::infinite, caf::ok_atom::value)
      .then([then](caf::ok_atom) { then(); }, [then](caf::error&) { then(); });
}

namespace {

// The agent actor is stopped (~Agent sends it an exit message) with calls still pending: when
// it was not shut down first (shutdown_on_destruction false, or not RUNNING), or calls came
// from other threads meanwhile. Each is answered once before the actor goes, as Shutdown()
// answers them: blocked calls (gets, barriers, waits) with Cancelled, the others with
// Unavailable (the leader may or may not have applied them). The leader is not told that the
// task leaves: it sees the agent actor go.
void OnStop(AgentPointer self, const caf::exit_msg& msg) {
  if (!msg.reason) return;  // as CAF's default handler: a normal exit does not stop the agent
  auto& st = self->state;
  StopReconnecting(self);
  const std::string destroyed =
      absl::StrCat("the agent of ", TaskName(st.config.task), " was destroyed");
  absl::Status cancelled =
      absl::CancelledError(absl::StrCat("cancelled: ", destroyed, " while the call waited"));
  FailSyncWaiters(self, cancelled);
  FailPending(self, cancelled, /*blocking_only=*/true);
  FailPending(self,
              absl::UnavailableError(
                  absl::StrCat(destroyed,
                               " before the leader answered; the call may or may not have been "
                               "applied")),
              /*blocking_only=*/false);
  if (st.connecting.pending()) {
    st.connecting.deliver(ToError(absl::CancelledError(
        absl::StrCat("Connect() was cancelled: ", destroyed, " while it connected"))));
  }
  auto waiting = std::move(st.awaiting_leader);
  st.awaiting_leader.clear();
  for (auto& run : waiting) run(cancelled);
  if (st.config.direct) st.config.direct->SetRoute(nullptr);  // no direct call after the actor
  self->quit(msg.reason);
}

}  // namespace

void InitAgent(AgentPointer self, AgentConfig config, CallbackRunnerActor runner) {
  PinToNetworkThread(self);
  self->state.callbacks = runner ? std::move(runner) : SpawnCallbackRunner(self->system());
  self->attach_functor([runner = self->state.callbacks](const caf::error&) {
    caf::anon_send(runner, caf::close_atom::value);
  });
  if (config.incarnation == 0) config.incarnation = NewIncarnation();
  self->state.config = std::move(config);
  self->state.request_client = NewIncarnation();  // random, non-zero
  self->set_down_handler([self](caf::down_msg& down) { OnLeaderDown(self, down); });
  self->set_exit_handler([self](caf::exit_msg& msg) { OnStop(self, msg); });
  // An error that arrives as a message of its own, not as the answer to a request: the leader's
  // refusal of a one-way heartbeat that did not reach the coordinator (its token gate refuses
  // a node that presented no token). It puts a running agent in ERROR; CAF's default would end
  // the agent actor.
  self->set_error_handler([self](caf::error& error) {
    if (Registered(self) && !FromFormerLeader(self)) SetError(self, ToStatus(error));
  });
}

void HandlePushedError(AgentPointer self, const proto::ReportErrorToTaskRequest& report) {
  OnPushedError(self, report);
}

bool FromFormerLeader(AgentPointer self) {
  const caf::strong_actor_ptr& sender = self->current_sender();
  const CoordinatorActor& leader = self->state.leader;
  return IsFormerLeaderNode(sender ? sender->node() : caf::node_id{}, self->node(),
                            leader ? leader.node() : caf::node_id{});
}

bool IsFormerLeaderNode(const caf::node_id& sender, const caf::node_id& own,
                        const caf::node_id& leader) {
  if (sender == caf::none || sender == own) return false;  // anonymous, or this process's own
  return leader == caf::none || sender != leader;
}

AgentControlActor SpawnAgentActor(caf::actor_system& system, AgentConfig config,
                                  CallbackRunnerActor runner) {
  return system.spawn(
      [](AgentPointer self, AgentConfig config, CallbackRunnerActor runner) {
        InitAgent(self, std::move(config), std::move(runner));
        return PhaseBehavior(self, AgentPhase::kDisconnected);
      },
      std::move(config), std::move(runner));
}

}  // namespace muster
