// The handlers every phase of the agent actor shares (internal to net/agent/actor): pushes from
// the leader, the calls it forwards, key-value calls (one per MUSTER_KV_CALLS entry), watches,
// barriers, preemption, its status and the call deadline timer. Each phase's behaviour
// (agent_phases.cc) is its own lifecycle handlers followed by these.
#pragma once

#include <string>
#include <tuple>
#include <type_traits>

#include "muster/messages/vocabulary/kv_calls.h"
#include "muster/net/agent/actor/calls/agent_forward.h"

namespace muster {

// The forwarded calls with some work of their own (agent_calls.cc).
caf::result<proto::ReportErrorToServiceResponse> ReportError(
    AgentPointer self, proto::ReportErrorToServiceRequest request);
caf::result<proto::GetKeyValueResponse> GetKeyValue(AgentPointer self,
                                                    const proto::GetKeyValueRequest& request);
caf::result<proto::BarrierResponse> Barrier(AgentPointer self, proto::BarrierRequest request);
caf::result<proto::CancelBarrierResponse> CancelBarrier(AgentPointer self,
                                                        proto::CancelBarrierRequest request);
// Withdraws the blocked gets of `key`: at the leader, or here while it is away (they are not
// re-sent then).
void CancelGets(AgentPointer self, const std::string& key);

// A blocking call's deadline at the agent: the call's own timeout and a margin for the leader's
// answer (none for a timeout of 0 or less: the call waits as long as the leader does).
inline caf::duration BlockingTimeout(int64_t timeout_ms) {
  constexpr caf::timespan kBlockingMargin = std::chrono::seconds(5);
  if (timeout_ms <= 0) return caf::duration{caf::infinite};
  return caf::duration{std::chrono::milliseconds(timeout_ms) + kBlockingMargin};
}

// Forwards a call that only a registered task makes (WrongState otherwise).
template <class Response, class Request>
caf::result<Response> RunningOnly(AgentPointer self, const Request& request,
                                  absl::string_view call) {
  if (!Registered(self)) return ToError(WrongState(self, call));
  return Forward<Response>(self, request, caf::duration{self->state.config.rpc_timeout});
}

// An ephemeral write names this task as its writer (the leader checks that it is).
template <class Request>
void NameWriter(AgentPointer self, Request& request) {
  if (request.ephemeral()) *request.mutable_source_task() = self->state.config.task;
}

// The lowest sequence number of the writes this actor numbered that are still pending, or
// `next` without one. Pending calls are in the order they were made, as are the numbers: the
// first pending write is the one (after any older reads still waiting).
inline uint64_t OldestWriteInFlight(const AgentActorState& st, uint64_t next) {
  for (const auto& [id, call] : st.pending) {
    if (call.write_seq != 0) return call.write_seq;
  }
  return next;
}

// With leader_reconnect_timeout, a write carries a request id: a write re-sent after a
// reconnect keeps it, and the leader answers it from its record instead of applying it twice.
// The id also tells the leader the oldest write still pending, whose replies and later ones
// are all it needs to keep. Returns the write's sequence number (0: it has none of this actor's).
template <class Request>
uint64_t IdentifyWrite(AgentPointer self, Request& request) {
  auto& st = self->state;
  // A write the agent first made directly keeps that attempt's id (Agent::AskKv).
  if (st.config.leader_reconnect_timeout <= caf::timespan{0} || request.has_request_id()) return 0;
  uint64_t seq = ++st.request_seq;
  proto::RequestId& id = *request.mutable_request_id();
  id.set_client(st.request_client);
  id.set_seq(seq);
  id.set_answered_below(OldestWriteInFlight(st, seq));
  return seq;
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
      AgentActorState::Pending call;
      call.write_seq = IdentifyWrite(self, request);
      return Forward<Response>(self, request, caf::duration{self->state.config.rpc_timeout},
                               std::move(call));
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
inline auto KvCalls(AgentPointer self) {
#define MUSTER_AGENT_KV_CALL(Verb, label) std::make_tuple(KvCall<proto::Verb##Request>(self)),
  return std::tuple_cat(MUSTER_KV_CALLS(MUSTER_AGENT_KV_CALL) std::tuple<>());
#undef MUSTER_AGENT_KV_CALL
}

// The handlers every phase shares, as a tuple.
inline auto SharedHandlers(AgentPointer self) {
  auto rpc = [self] { return caf::duration{self->state.config.rpc_timeout}; };
  auto handlers = std::make_tuple(
      [=](const proto::ReportErrorToTaskRequest& report) {
        if (!FromFormerLeader(self)) HandlePushedError(self, report);
      },
      [=](const proto::KeyValueChangeEvent& event) {
        if (!FromFormerLeader(self)) OnChange(self, event);
      },
      [=](const proto::PreemptionNotice& notice) {
        return FromFormerLeader(self) ? proto::PreemptionAck() : OnPreemptionNotice(self, notice);
      },
      [=](const proto::SyncPointNotice& notice) {
        if (!FromFormerLeader(self)) OnSyncPoint(self, notice);
      },
      [=](const proto::MembershipNotice& notice) {
        if (FromFormerLeader(self)) return;
        if (auto& on_membership = self->state.config.on_membership) {
          RunUserCallback(self, [on_membership, membership = notice.membership()] {
            on_membership(membership);
          });
        }
      },
      [=](proto::ReportErrorToServiceRequest request) { return ReportError(self, request); },
      [=](proto::WaitForAllTasksRequest request) {
        *request.mutable_source_task() = self->state.config.task;
        return RunningOnly<proto::WaitForAllTasksResponse>(self, request, "WaitForAllTasks()");
      },
      // Reads of the job's state, like the key-value calls, need no registration: before the
      // leader is known they wait for it.
      [=](const proto::GetTaskStateRequest& r) -> caf::result<proto::GetTaskStateResponse> {
        if (!HasLeader(self)) return AfterLeader<proto::GetTaskStateResponse>(self, r);
        return Forward<proto::GetTaskStateResponse>(self, r, rpc());
      },
      [=](const proto::WatchJobStateRequest& r) -> caf::result<proto::WatchJobStateResponse> {
        if (!HasLeader(self)) return AfterLeader<proto::WatchJobStateResponse>(self, r);
        return Forward<proto::WatchJobStateResponse>(self, r, caf::duration{caf::infinite},
                                                     {.cancel_on_shutdown = true});
      },
      [=](proto::GetAliveTasksRequest request) {
        *request.mutable_requesting_task() = self->state.config.task;
        return Forward<proto::GetAliveTasksResponse>(self, request, caf::duration{caf::infinite},
                                                     {.cancel_on_shutdown = true});
      },
      [=](const proto::WatchKeyRequest& r,
          const WatchCallback& callback) -> caf::result<proto::WatchKeyResponse> {
        if (!HasLeader(self)) return AfterLeader<proto::WatchKeyResponse>(self, r, callback);
        return WatchKey(self, r, callback);
      },
      [=](const proto::StopWatchKeyRequest& r) { return StopWatchKey(self, r); },
      [=](cancel_atom, const std::string& key) { CancelGets(self, key); },
      [=](proto::BarrierRequest request) { return Barrier(self, std::move(request)); },
      [=](proto::CancelBarrierRequest request) { return CancelBarrier(self, std::move(request)); },
      [=](const proto::GetBarrierProgressRequest& r) {
        return Forward<proto::GetBarrierProgressResponse>(self, r, rpc());
      },
      [=](proto::NotifyPreemptionRequest r) { return NotifyPreemption(self, std::move(r)); },
      [=](sync_point_atom, int64_t step) { return ReachedSyncPoint(self, step); },
      [=](proto::WaitForMembershipRequest request)
          -> caf::result<proto::WaitForMembershipResponse> {
        if (!Registered(self)) return ToError(WrongState(self, "WaitForMembership()"));
        *request.mutable_source_task() = self->state.config.task;
        return Forward<proto::WaitForMembershipResponse>(
            self, request, BlockingTimeout(request.timeout_in_ms()), {.cancel_on_shutdown = true});
      },
      [=](const proto::GetMembershipRequest& r) -> caf::result<proto::GetMembershipResponse> {
        if (!HasLeader(self)) return AfterLeader<proto::GetMembershipResponse>(self, r);
        return Forward<proto::GetMembershipResponse>(self, r, rpc());
      },
      [=](cancel_atom, const caf::actor_addr& caller) { CancelGetsOf(self, caller); },
      [=](agent_state_atom) {
        const auto& st = self->state;
        return AgentStatus{.state = PublicState(st.phase),
                           .error = st.phase == AgentPhase::kError ? st.error : absl::OkStatus(),
                           .reconnecting = st.phase == AgentPhase::kReconnecting,
                           .dropped_watches = st.dropped_watches};
      },
      // Connect()'s retry timer: its promise may outlive CONNECTING (see AgentActorState).
      [=](retry_atom) { OnRetry(self); }, [=](deadline_atom) { ExpireCalls(self); });
  return std::tuple_cat(std::move(handlers), KvCalls(self));
}

}  // namespace muster
