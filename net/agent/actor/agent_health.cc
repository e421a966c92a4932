// The agent's part of the preemption protocol. The leader pushes a notice; the agent answers
// with the task's last step and, from then on, a ReachedSyncPoint call for a later step waits
// until the leader pushes the sync step. A call for the answered step or an earlier one cannot
// be the sync step (it is at least the answered step plus one), so it returns false at once.
//
//   RUNNING --notice--> ANSWERED(step) --sync step--> DECIDED: ReachedSyncPoint(s) == (s == sync)
#include <absl/strings/str_cat.h>

#include "muster/net/agent/actor/calls/agent_forward.h"

namespace muster {
namespace {

void Settle(AgentPointer self) {
  auto& st = self->state;
  if (!st.sync_step || !st.notice_delivered) return;
  for (auto& [step, promise] : st.sync_waiters) promise.deliver(step == *st.sync_step);
  st.sync_waiters.clear();
}

}  // namespace

proto::PreemptionAck OnPreemptionNotice(AgentPointer self, const proto::PreemptionNotice& notice) {
  auto& st = self->state;
  AgentProgress& progress = *st.config.progress;
  // Set the flag before reading the step: a task thread that stored a later step after this
  // read sees the flag and asks this actor (see AgentProgress).
  progress.preempting.store(true);
  int64_t step = progress.step.load();
  proto::PreemptionAck ack;
  bool first = !st.preemption.has_value();
  if (first) {
    st.preemption = notice;
    if (step != AgentProgress::kNoStep) st.answered_step = step;
  }
  if (st.answered_step) ack.set_step(*st.answered_step);
  if (first) {
    if (st.config.on_preemption) {
      RunUserCallback(self,
                      [on_preemption = st.config.on_preemption, notice] { on_preemption(notice); });
    }
    // Answers of ReachedSyncPoint wait until the callbacks queued so far (this one) have run.
    uint64_t seq = ++st.notice_seq;
    AfterUserCallbacks(self, [self, seq] {
      if (self->state.notice_seq != seq) return;  // a later episode
      self->state.notice_delivered = true;
      Settle(self);
    });
  }
  return ack;
}

void OnSyncPoint(AgentPointer self, const proto::SyncPointNotice& notice) {
  auto& st = self->state;
  if (st.sync_step) return;  // the first decision stands
  st.sync_step = notice.step();
  st.config.progress->preempting.store(true);
  Settle(self);
}

caf::result<bool> ReachedSyncPoint(AgentPointer self, int64_t step) {
  auto& st = self->state;
  st.config.progress->step.store(step);
  if (st.sync_step && st.notice_delivered) return step == *st.sync_step;
  if (!st.preemption || (st.answered_step && step <= *st.answered_step)) return false;
  if (!Registered(self)) {
    return ToError(absl::FailedPreconditionError(
        absl::StrCat("ReachedSyncPoint(", step, ") of ", TaskName(st.config.task),
                     " would wait for the leader's sync step, but the agent is ",
                     AgentStateName(PublicState(st.phase)),
                     st.phase == AgentPhase::kError ? absl::StrCat(": ", StatusText(st.error)) : "",
                     "; connect (or reset) it first")));
  }
  auto promise = self->make_response_promise<bool>();
  st.sync_waiters.emplace_back(step, promise);
  return promise;
}

caf::result<proto::NotifyPreemptionResponse> NotifyPreemption(
    AgentPointer self, proto::NotifyPreemptionRequest request) {
  auto& st = self->state;
  if (!Registered(self)) return ToError(WrongState(self, "NotifyPreemption()"));
  *request.mutable_source_task() = st.config.task;
  if (absl::Status size = CheckRequestSize(self, request); !size.ok()) return ToError(size);
  using Response = proto::NotifyPreemptionResponse;
  auto promise = self->make_response_promise<Response>();
  auto on_result = [self, promise](absl::StatusOr<Response> result) mutable {
    // The notice reaches this agent before the answer: its on_preemption callback, queued on
    // the callback runner, runs before the caller learns that it notified.
    AfterUserCallbacks(self, [promise, result]() mutable {
      if (result.ok()) {
        promise.deliver(*std::move(result));
      } else {
        promise.deliver(ToError(result.status()));
      }
    });
  };
  CallLeader<Response>(self, caf::duration{st.config.rpc_timeout}, {}, std::move(on_result),
                       request);
  return promise;
}

void ForgetPreemption(AgentPointer self) {
  auto& st = self->state;
  st.preemption.reset();
  st.answered_step.reset();
  st.sync_step.reset();
  st.notice_delivered = false;
  ++st.notice_seq;
  st.config.progress->preempting.store(false);
}

void FailSyncWaiters(AgentPointer self, const absl::Status& status) {
  auto& st = self->state;
  caf::error error = ToError(status);
  for (auto& [step, promise] : st.sync_waiters) promise.deliver(error);
  st.sync_waiters.clear();
}

}  // namespace muster
