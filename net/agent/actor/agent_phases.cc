// The agent actor's phases, one behaviour each (the diagram is AgentPhase's, agent_state.h).
// A phase answers Connect, Shutdown and Reset in its own way and takes its own timers (the
// heartbeat in RUNNING, the reconnect's try and deadline in RECONNECTING); a timer of a phase
// that ended is dropped. Every phase then takes the same shared handlers
// (calls/agent_handlers.h).
#include <tuple>
#include <utility>

#include "muster/messages/status/status_codec.h"
#include "muster/net/agent/actor/calls/agent_handlers.h"
#include "muster/net/agent/direct/direct_channel.h"

namespace muster {
namespace {

using Behavior = AgentControlActor::behavior_type;

// A phase's behaviour: its lifecycle handlers, then the shared ones.
template <class... Lifecycle>
Behavior Compose(AgentPointer self, Lifecycle... lifecycle) {
  return std::apply(
      [&](auto... shared) -> Behavior {
        return {lifecycle..., shared...};
      },
      SharedHandlers(self));
}

auto RefuseConnect(AgentPointer self) {
  return [self](caf::connect_atom) -> caf::result<proto::RegisterTaskResponse> {
    return ToError(NotDisconnected(self));
  };
}

auto RefuseReset(AgentPointer self) {
  return [self](const proto::ResetTaskRequest&) -> caf::result<proto::ResetTaskResponse> {
    return ToError(NotInError(self));
  };
}

auto LeaveWithoutLeader(AgentPointer self) {
  return [self](const proto::ShutdownTaskRequest&) { return LeaveLocally(self); };
}

// The timers of phases that ended: a heartbeat, a reconnect's next try or deadline.
auto DropBeat() {
  return [](beat_atom, uint64_t) {};
}
auto DropTry() {
  return [](retry_atom, uint64_t) {};
}
auto DropDeadline() {
  return [](deadline_atom, uint64_t) {};
}

Behavior DisconnectedPhase(AgentPointer self) {
  return Compose(
      self, [self](caf::connect_atom) { return Connect(self); }, LeaveWithoutLeader(self),
      RefuseReset(self), DropBeat(), DropTry(), DropDeadline());
}

// A Shutdown() here leaves without the leader and the Connect() goes on (LeaveLocally).
Behavior ConnectingPhase(AgentPointer self) {
  return Compose(self, RefuseConnect(self), LeaveWithoutLeader(self), RefuseReset(self), DropBeat(),
                 DropTry(), DropDeadline());
}

Behavior RunningPhase(AgentPointer self) {
  return Compose(
      self, RefuseConnect(self),
      [self](const proto::ShutdownTaskRequest&) { return ShutdownRunning(self); },
      RefuseReset(self), [self](beat_atom, uint64_t generation) { HandleBeat(self, generation); },
      DropTry(), DropDeadline());
}

Behavior ReconnectingPhase(AgentPointer self) {
  return Compose(
      self, RefuseConnect(self),
      [self](const proto::ShutdownTaskRequest&) { return ShutdownReconnecting(self); },
      RefuseReset(self), DropBeat(),
      [self](retry_atom, uint64_t attempt) { OnReconnectRetry(self, attempt); },
      [self](deadline_atom, uint64_t episode) { OnReconnectDeadline(self, episode); });
}

Behavior ErrorPhase(AgentPointer self) {
  return Compose(
      self, RefuseConnect(self), LeaveWithoutLeader(self),
      [self](const proto::ResetTaskRequest&) { return Reset(self); }, DropBeat(), DropTry(),
      DropDeadline());
}

}  // namespace

Behavior PhaseBehavior(AgentPointer self, AgentPhase phase) {
  switch (phase) {
    case AgentPhase::kDisconnected:
      return DisconnectedPhase(self);
    case AgentPhase::kConnecting:
      return ConnectingPhase(self);
    case AgentPhase::kRunning:
      return RunningPhase(self);
    case AgentPhase::kReconnecting:
      return ReconnectingPhase(self);
    case AgentPhase::kError:
      return ErrorPhase(self);
  }
  return ErrorPhase(self);
}

namespace {

// The route of the agent's direct calls: the leader's direct port while RUNNING, on the host
// the agent reached it at (a leader of a single address: an HA job's leaders offer none).
void RouteDirectCalls(AgentPointer self) {
  auto& st = self->state;
  if (!st.config.direct) return;
  const ConnectOptions& leader = st.config.leader;
  if (st.phase != AgentPhase::kRunning || st.direct_port == 0 || st.direct_port > 65535 ||
      st.config.local_leader || leader.host.empty() || !leader.other_leaders.empty() ||
      !leader.registry.empty()) {
    st.config.direct->SetRoute(nullptr);
    return;
  }
  st.config.direct->SetRoute(std::make_shared<DirectRoute>(
      leader.host, static_cast<uint16_t>(st.direct_port), st.config.token));
}

}  // namespace

void EnterPhase(AgentPointer self, AgentPhase phase) {
  if (self->state.phase == phase) return;
  self->state.phase = phase;
  RouteDirectCalls(self);
  self->become(PhaseBehavior(self, phase));
}

}  // namespace muster
