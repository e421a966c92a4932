// The agent actor's calls: requests it forwards to the leader (with the task's identity filled
// in), barrier counters, call deadlines, and the leader of key-value calls made before
// Connect(). The behaviours that take them are in agent_phases.cc.
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/actor/calls/agent_handlers.h"

namespace muster {

// Reports the task's own error: the leader puts the task in ERROR and tells the others; the
// agent goes to ERROR at once (its error callback fires).
caf::result<proto::ReportErrorToServiceResponse> ReportError(
    AgentPointer self, proto::ReportErrorToServiceRequest request) {
  auto& st = self->state;
  if (!Registered(self)) return ToError(WrongState(self, "ReportError()"));
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

namespace {

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

}  // namespace

caf::result<proto::BarrierResponse> Barrier(AgentPointer self, proto::BarrierRequest request) {
  auto& st = self->state;
  const std::string id = request.barrier_id();
  if (st.phase == AgentPhase::kError) return ToError(WrongState(self, "WaitAtBarrier()"));
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

void CancelGets(AgentPointer self, const std::string& key) {
  auto& st = self->state;
  if (st.leader) {
    self->send(st.leader, cancel_atom::value, key);
    return;
  }
  if (!Reconnecting(self)) return;
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
    if (it == st.pending.end() || Reconnecting(self)) continue;  // answered, or re-sent later
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

}  // namespace muster
