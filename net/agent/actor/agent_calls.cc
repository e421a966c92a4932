// The agent actor's behavior: requests it forwards to the leader (with the task's identity
// filled in), barrier counters, and the leader of key-value calls made before Connect().
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <absl/strings/str_cat.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/messages/vocabulary/kv_calls.h"
#include "muster/net/agent/actor/agent_state.h"

namespace muster {
namespace {

constexpr caf::timespan kBlockingMargin = std::chrono::seconds(5);

caf::duration BlockingTimeout(int64_t timeout_ms) {
  if (timeout_ms <= 0) return caf::duration{caf::infinite};
  return caf::duration{std::chrono::milliseconds(timeout_ms) + kBlockingMargin};
}

// An ephemeral write names this task as its writer (the leader checks that it is).
template <class Request>
void NameWriter(AgentPointer self, Request& request) {
  if (request.ephemeral()) *request.mutable_source_task() = self->state.config.task;
}

template <class Response, class Request>
caf::result<Response> RunningOnly(AgentPointer self, const Request& request,
                                  absl::string_view call) {
  if (self->state.state != AgentState::kRunning) return ToError(WrongState(self, call));
  return Forward<Response>(self, request, caf::duration{self->state.config.rpc_timeout});
}

// Reports the task's own error: the leader puts the task in ERROR and tells the others; the
// agent goes to ERROR at once (its error callback fires).
caf::result<proto::ReportErrorToServiceResponse> ReportError(
    AgentPointer self, proto::ReportErrorToServiceRequest request) {
  auto& st = self->state;
  if (st.state != AgentState::kRunning) return ToError(WrongState(self, "ReportError()"));
  *request.mutable_error_origin() = st.config.task;
  auto result = Forward<proto::ReportErrorToServiceResponse>(self, request,
                                                             caf::duration{st.config.rpc_timeout});
  int code = request.error_code();
  if (code <= 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) code = 2;
  SetError(self, MakeCoordinationError(
                     absl::Status(static_cast<absl::StatusCode>(code), request.error_message()),
                     st.config.task, /*is_reported_error=*/true));
  return result;
}

caf::result<proto::GetKeyValueResponse> GetKeyValue(AgentPointer self,
                                                    const proto::GetKeyValueRequest& request) {
  AgentActorState::Pending info;
  info.cancel_on_shutdown = true;
  info.key = request.key();
  info.caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
  return Forward<proto::GetKeyValueResponse>(self, request,
                                             BlockingTimeout(request.timeout_in_ms()), info);
}

void AfterBarrier(AgentPointer self, const std::string& id,
                  const absl::StatusOr<proto::BarrierResponse>& result) {
  auto& st = self->state;
  st.barriers_in_flight.erase(id);
  if (result.ok()) {
    st.barrier_counters[id] = result->counter();
  } else if (int64_t counter = GetBarrierCounter(result.status()); counter >= 0) {
    st.barrier_counters[id] = counter;
  }
}

caf::result<proto::BarrierResponse> Barrier(AgentPointer self, proto::BarrierRequest request) {
  auto& st = self->state;
  const std::string id = request.barrier_id();
  if (st.state == AgentState::kError) return ToError(WrongState(self, "WaitAtBarrier()"));
  if (st.barriers_in_flight.contains(id)) {
    return ToError(absl::FailedPreconditionError(
        absl::StrCat("Barrier ", id, " is already ongoing for ", TaskName(st.config.task),
                     "; wait for it or cancel it first.")));
  }
  auto last = st.barrier_counters.find(id);
  request.set_counter(last == st.barrier_counters.end() ? 0 : last->second + 1);
  *request.mutable_source_task() = st.config.task;
  AgentActorState::Pending info;
  info.cancel_on_shutdown = true;
  auto result = Forward<proto::BarrierResponse>(
      self, request, BlockingTimeout(std::max<int64_t>(request.barrier_timeout_in_ms(), 1)), info,
      [self, id](const absl::StatusOr<proto::BarrierResponse>& r) { AfterBarrier(self, id, r); },
      st.config.barrier_combiner);
  if (HasLeader(self)) st.barriers_in_flight[id] = request.counter();
  return result;
}

caf::result<proto::CancelBarrierResponse> CancelBarrier(AgentPointer self,
                                                        proto::CancelBarrierRequest request) {
  auto& st = self->state;
  const std::string& id = request.barrier_id();
  auto in_flight = st.barriers_in_flight.find(id);
  if (in_flight == st.barriers_in_flight.end()) {
    return ToError(absl::FailedPreconditionError(
        st.barrier_counters.contains(id)
            ? absl::StrCat("Tried to cancel barrier ", id, " that is not ongoing.")
            : absl::StrCat("Tried to cancel non-existent barrier ", id, ".")));
  }
  request.set_counter(in_flight->second);
  *request.mutable_source_task() = st.config.task;
  return Forward<proto::CancelBarrierResponse>(self, request, caf::duration{st.config.rpc_timeout});
}

// With leader_reconnect_timeout, a write carries a request id: a write re-sent after a
// reconnect keeps it, and the leader answers it from its record instead of applying it twice.
template <class Request>
void IdentifyWrite(AgentPointer self, Request& request) {
  auto& st = self->state;
  if (st.config.leader_reconnect_timeout <= caf::timespan{0}) return;
  request.mutable_request_id()->set_client(st.request_client);
  request.mutable_request_id()->set_seq(++st.request_seq);
}

// The agent actor's handler of a key-value call of MUSTER_KV_CALLS. Before the leader is known
// a call waits for it. A write (its request has a request id) gets a copy of its request to fill
// in: a request id, and its writer when the request has a source task. GetKeyValue and
// WaitForKeys wait at the leader, with timeouts and cancels of their own; every other read is
// forwarded as it is.
template <class Request>
auto KvCall(AgentPointer self) {
  using Response = KvCallResponse<Request>;
  if constexpr (requires(Request request) { request.mutable_request_id(); }) {
    return [self](Request request) -> caf::result<Response> {
      if (!HasLeader(self)) return AfterLeader<Response>(self, request);
      if constexpr (requires { request.mutable_source_task(); }) NameWriter(self, request);
      IdentifyWrite(self, request);
      return Forward<Response>(self, request, caf::duration{self->state.config.rpc_timeout});
    };
  } else {
    return [self](const Request& request) -> caf::result<Response> {
      if (!HasLeader(self)) return AfterLeader<Response>(self, request);
      if constexpr (std::is_same_v<Request, proto::GetKeyValueRequest>) {
        return GetKeyValue(self, request);
      } else if constexpr (std::is_same_v<Request, proto::WaitForKeysRequest>) {
        return Forward<Response>(self, request, BlockingTimeout(request.timeout_in_ms()),
                                 {.cancel_on_shutdown = true});
      } else {
        return Forward<Response>(self, request, caf::duration{self->state.config.rpc_timeout});
      }
    };
  }
}

// The handlers of every call of MUSTER_KV_CALLS, as a tuple.
auto KvCalls(AgentPointer self) {
#define MUSTER_AGENT_KV_CALL(Verb) std::make_tuple(KvCall<proto::Verb##Request>(self)),
  return std::tuple_cat(MUSTER_KV_CALLS(MUSTER_AGENT_KV_CALL) std::tuple<>());
#undef MUSTER_AGENT_KV_CALL
}

// Withdraws the blocked gets of `key`: at the leader, or here while it is away (they are not
// re-sent then).
void CancelGets(AgentPointer self, const std::string& key) {
  auto& st = self->state;
  if (st.leader) {
    self->send(st.leader, cancel_atom::value, key);
    return;
  }
  if (!st.reconnecting) return;
  std::vector<uint64_t> ids;
  for (const auto& [id, call] : st.pending) {
    if (call.caller && call.key == key) ids.push_back(id);
  }
  for (uint64_t id : ids) {
    auto fail = std::move(st.pending.at(id).fail);
    st.pending.erase(id);
    fail(ToError(absl::CancelledError(
        absl::StrCat("GetKeyValue(", key, ") was cancelled by CancelGetKeyValue"))));
  }
}

}  // namespace

void StartDeadline(AgentPointer self, uint64_t id, caf::duration timeout) {
  auto& deadlines = self->state.call_deadlines;
  deadlines.Remove(id);
  if (!timeout.valid()) return;
  auto now = self->clock().now();
  auto deadline = now;
  deadline += timeout;
  if (auto arm = deadlines.Add(id, deadline)) {
    self->delayed_send(self, *arm - now, deadline_atom::value);
  }
}

void ExpireCalls(AgentPointer self) {
  auto& st = self->state;
  auto now = self->clock().now();
  std::optional<caf::actor_clock::time_point> rearm;
  for (uint64_t id : st.call_deadlines.TakeExpired(now, rearm)) {
    auto it = st.pending.find(id);
    if (it == st.pending.end() || st.reconnecting) continue;  // answered, or re-sent later
    auto fail = std::move(it->second.fail);
    st.pending.erase(it);
    fail(caf::make_error(caf::sec::request_timeout));
  }
  if (rearm) self->delayed_send(self, *rearm - now, deadline_atom::value);
}

void WithLeader(AgentPointer self, std::function<void(const absl::Status&)> then) {
  auto& st = self->state;
  UseLocalLeader(self);
  if (st.leader && !NeedsToken(self)) return then(absl::OkStatus());
  st.awaiting_leader.push_back(std::move(then));
  if (st.awaiting_leader.size() > 1) return;  // a connection is under way
  // A leader session reaches the leader (unless the agent has it) and presents the job token.
  LeaderSessionOptions options{.connect = st.config.leader,
                               .leader = st.leader,
                               .token = st.config.token,
                               .authenticate_timeout = st.config.rpc_timeout};
  options.connect.timeout = st.config.rpc_timeout;
  OpenLeaderSession(self, std::move(options), [self](LeaderSessionReply reply) {
    auto& st = self->state;
    if (reply.status.ok()) AdoptSession(self, reply);  // Connect() may have found a leader
    auto waiting = std::move(st.awaiting_leader);
    st.awaiting_leader.clear();
    for (auto& run : waiting) run(reply.status);
  });
}

AgentControlActor::behavior_type AgentBehavior(AgentPointer self) {
  auto rpc = [self] { return caf::duration{self->state.config.rpc_timeout}; };
  // The calls of MUSTER_KV_CALLS come from KvCalls: kv_calls.h lists them.
  return std::apply(
      [=](auto... kv_calls) -> AgentControlActor::behavior_type {
        return {
            [=](const proto::ReportErrorToTaskRequest& report) { HandlePushedError(self, report); },
            [=](const proto::KeyValueChangeEvent& event) { OnChange(self, event); },
            [=](const proto::PreemptionNotice& notice) { return OnPreemptionNotice(self, notice); },
            [=](const proto::SyncPointNotice& notice) { OnSyncPoint(self, notice); },
            [=](caf::connect_atom) { return Connect(self); },
            [=](const proto::ShutdownTaskRequest&) { return Shutdown(self); },
            [=](const proto::ResetTaskRequest&) { return Reset(self); },
            [=](proto::ReportErrorToServiceRequest request) { return ReportError(self, request); },
            [=](proto::WaitForAllTasksRequest request) {
              *request.mutable_source_task() = self->state.config.task;
              return RunningOnly<proto::WaitForAllTasksResponse>(self, request,
                                                                 "WaitForAllTasks()");
            },
            [=](const proto::GetTaskStateRequest& r) {
              return Forward<proto::GetTaskStateResponse>(self, r, rpc());
            },
            [=](const proto::WatchJobStateRequest& r) {
              return Forward<proto::WatchJobStateResponse>(self, r, caf::duration{caf::infinite},
                                                           {.cancel_on_shutdown = true});
            },
            [=](proto::GetAliveTasksRequest request) {
              *request.mutable_requesting_task() = self->state.config.task;
              return Forward<proto::GetAliveTasksResponse>(
                  self, request, caf::duration{caf::infinite}, {.cancel_on_shutdown = true});
            },
            kv_calls...,
            [=](const proto::WatchKeyRequest& r,
                const WatchCallback& callback) -> caf::result<proto::WatchKeyResponse> {
              if (!HasLeader(self)) return AfterLeader<proto::WatchKeyResponse>(self, r, callback);
              return WatchKey(self, r, callback);
            },
            [=](const proto::StopWatchKeyRequest& r) { return StopWatchKey(self, r); },
            [=](cancel_atom, const std::string& key) { CancelGets(self, key); },
            [=](proto::BarrierRequest request) { return Barrier(self, std::move(request)); },
            [=](proto::CancelBarrierRequest request) {
              return CancelBarrier(self, std::move(request));
            },
            [=](const proto::GetBarrierProgressRequest& r) {
              return Forward<proto::GetBarrierProgressResponse>(self, r, rpc());
            },
            [=](proto::NotifyPreemptionRequest r) { return NotifyPreemption(self, std::move(r)); },
            [=](sync_point_atom, int64_t step) { return ReachedSyncPoint(self, step); },
            [=](cancel_atom) {
              CancelGetsOf(self, caf::actor_cast<caf::actor_addr>(self->current_sender()));
            },
            [=](agent_state_atom) {
              const auto& st = self->state;
              return AgentStatus{
                  .state = st.state,
                  .error = st.state == AgentState::kError ? st.error : absl::OkStatus(),
                  .reconnecting = st.reconnecting,
                  .dropped_watches = st.dropped_watches};
            },
            [=](beat_atom, uint64_t generation) { HandleBeat(self, generation); },
            [=](retry_atom) { OnRetry(self); },
            [=](retry_atom, uint64_t attempt) { OnReconnectRetry(self, attempt); },
            [=](deadline_atom, uint64_t episode) { OnReconnectDeadline(self, episode); },
            [=](deadline_atom) { ExpireCalls(self); },
        };
      },
      KvCalls(self));
}

}  // namespace muster
