// The agent actor's shutdown (agent_state.h): a RUNNING agent tells its leader (and waits at the
// shutdown barrier); one whose task is not registered leaves without asking it; a RECONNECTING
// agent fails the calls it kept. Each ends with heartbeats stopped and blocking calls cancelled.
#include <string>

#include <absl/strings/str_cat.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/actor/calls/agent_forward.h"

namespace muster {
namespace {

// Ends a shutdown: stops heartbeats, cancels blocking calls, and returns the final status.
// `asked_leader`: the leader was sent the ShutdownTaskRequest (and `rpc` is its answer).
absl::Status FinishShutdown(AgentPointer self, const absl::Status& rpc, bool asked_leader) {
  auto& st = self->state;
  bool was_error = st.phase == AgentPhase::kError;
  StopHeartbeats(self);
  FailSyncWaiters(self, absl::CancelledError(absl::StrCat(
                            "cancelled: the agent of ", TaskName(st.config.task),
                            " is shutting down while ReachedSyncPoint waited for the sync step")));
  FailPending(self,
              absl::CancelledError(absl::StrCat("cancelled: the agent of ",
                                                TaskName(st.config.task), " is shutting down")),
              /*blocking_only=*/true);
  absl::Status result = rpc;
  if (!rpc.ok()) {  // the leader's answer (e.g. the shutdown barrier's failure) comes first
    result = absl::Status(rpc.code(),
                          absl::StrCat("Failed to disconnect from the leader: ", rpc.message(),
                                       ". Proceeding with agent shutdown anyway."));
    if (auto payload = GetCoordinationError(rpc)) {
      result = MakeCoordinationError(result, payload->source_task(), payload->is_reported_error());
    }
    SetError(self, result);
  } else if (was_error) {  // the job failed before this task left
    result = absl::FailedPreconditionError(absl::StrCat(
        "Shutdown() of ", TaskName(st.config.task),
        " was called while its agent is in ERROR state, implying that distributed execution "
        "failed: ",
        StatusText(st.error), ". The agent is now DISCONNECTED",
        asked_leader ? "" : " and did not contact the leader",
        "; end this process with a failure so that the job is restarted (in a recoverable job "
        "a new Agent may rejoin as a new incarnation)."));
  }
  // A Connect() under way goes on (it ends in RUNNING or ERROR), as it did before the phases.
  if (st.phase != AgentPhase::kConnecting) EnterPhase(self, AgentPhase::kDisconnected);
  return result;
}

}  // namespace

// In ERROR the job has failed: the agent leaves locally and returns FailedPrecondition, as the
// reference agent does, without asking the leader (whose answer, e.g. a failed shutdown
// barrier's, would hide that). The leader learns that the task went from its missing
// heartbeats, or when the agent actor stops.
caf::result<proto::ShutdownTaskResponse> LeaveLocally(AgentPointer self) {
  absl::Status status = FinishShutdown(self, absl::OkStatus(), /*asked_leader=*/false);
  if (!status.ok()) return ToError(status);
  return proto::ShutdownTaskResponse{};
}

caf::result<proto::ShutdownTaskResponse> ShutdownReconnecting(AgentPointer self) {
  // A leader found again, whose register answer is awaited: the shutdown is sent to it once the
  // agent is RUNNING again (or fails with the reconnect).
  if (self->state.leader) return ShutdownRunning(self);
  StopReconnecting(self);
  absl::Status status = FinishShutdown(self, absl::OkStatus(), /*asked_leader=*/false);
  // What is left never reached a leader, or its answer was lost.
  FailPending(self,
              absl::UnavailableError(absl::StrCat(
                  "the agent of ", TaskName(self->state.config.task),
                  " shut down while it waited for its lost leader; the call may or may "
                  "not have been applied")),
              /*blocking_only=*/false);
  if (!status.ok()) return ToError(status);
  return proto::ShutdownTaskResponse{};
}

caf::result<proto::ShutdownTaskResponse> ShutdownRunning(AgentPointer self) {
  auto& st = self->state;
  if (!st.leader) return LeaveLocally(self);
  proto::ShutdownTaskRequest request;
  *request.mutable_source_task() = st.config.task;
  auto promise = self->make_response_promise<proto::ShutdownTaskResponse>();
  CallLeader<proto::ShutdownTaskResponse>(
      self, caf::duration{st.config.shutdown_barrier_timeout + std::chrono::seconds(5)}, {},
      [self, promise](absl::StatusOr<proto::ShutdownTaskResponse> result) mutable {
        absl::Status status = FinishShutdown(self, result.status(), /*asked_leader=*/true);
        if (status.ok()) {
          promise.deliver(proto::ShutdownTaskResponse{});
        } else {
          promise.deliver(ToError(status));
        }
      },
      request);
  return promise;
}

}  // namespace muster
