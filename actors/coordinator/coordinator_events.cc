// The coordinator's events (proto/observe.proto, actors/observe/events/event_log_actor.h): what it
// tells its event log about each thing that happened. The handlers call these builders only when
// EventsWanted(): without an event log, nothing here runs and nothing is allocated.
#include <algorithm>
#include <string>
#include <utility>

#include <absl/strings/str_cat.h>

#include "muster/actors/coordinator/coordinator_state.h"
#include "muster/actors/observe/leader_metrics.h"
#include "muster/messages/status/status_codec.h"

namespace muster {
namespace {

proto::JobEvent Event(proto::JobEventKind kind) {
  proto::JobEvent event;
  event.set_kind(kind);
  return event;
}

void SetError(const absl::Status& status, proto::JobEvent* event) {
  event->set_error_code(static_cast<int32_t>(status.code()));
  if (!status.message().empty()) event->set_error_message(std::string(status.message()));
}

}  // namespace

void EmitEvent(CoordinatorPointer self, proto::JobEvent event) {
  if (self->state.options.metrics) self->state.options.metrics->CountEvent(event);
  const EventLogActor& events = self->state.options.events;
  if (events) self->send(events, std::move(event));
}

proto::JobEvent LeaderStartedEvent(const CoordinatorOptions& options) {
  proto::JobEvent event = Event(proto::LEADER_STARTED);
  event.set_incarnation(options.incarnation);
  const proto::RecoveredState* recovered = options.recovered.get();
  if (recovered == nullptr || recovered->fresh()) {
    event.set_detail(options.state_dir.empty()
                         ? "fresh"
                         : absl::StrCat("fresh (state dir ", options.state_dir, ")"));
    return event;
  }
  int connected = 0;
  for (const auto& task : recovered->tasks()) {
    connected += task.state() == proto::TASKSTATE_CONNECTED;
  }
  event.set_detail(absl::StrCat("recovered from state dir ", options.state_dir, ": ",
                                recovered->tasks_size(), " tasks (", connected, " connected), ",
                                recovered->barriers_size(), " barrier results; start ",
                                recovered->leader().starts() + 1, " of this leader"));
  return event;
}

proto::JobEvent TaskStateEvent(const proto::CoordinatedTaskStateInfo& info) {
  proto::JobEvent event =
      Event(info.state() == proto::TASKSTATE_CONNECTED ? proto::TASK_REGISTERED
            : info.state() == proto::TASKSTATE_ERROR   ? proto::TASK_FAILED
                                                       : proto::TASK_STATE_CHANGED);
  *event.mutable_task() = info.task();
  event.set_incarnation(info.incarnation());
  event.set_state(info.state());
  if (info.error_code() != 0) {
    event.set_error_code(info.error_code());
    event.set_error_message(info.error_message());
  }
  return event;
}

void EmitDecisionEvents(CoordinatorPointer self, const proto::CoordinatedTask& failed,
                        const FailureDecision& decision) {
  const auto& st = self->state;
  proto::JobEvent event;
  if (decision.restart == RestartScope::kTask) {
    event = Event(proto::TASK_RESTARTED);
  } else if (decision.restart == RestartScope::kAll) {
    event = Event(proto::ROUND_STARTED);
    event.set_round(st.launchers.round());
  } else if (decision.action == FailureAction::kPropagateToCluster ||
             decision.action == FailureAction::kFailJob) {
    event = Event(proto::JOB_FAILED);  // as the launchers are told (SupervisionEvent.job_failed)
  } else {
    return;
  }
  *event.mutable_task() = failed;
  SetError(decision.status, &event);
  event.set_detail(st.options.policy->Describe());
  EmitEvent(self, std::move(event));
}

proto::JobEvent BarrierOpenedEvent(const BarrierSpec& spec) {
  proto::JobEvent event = Event(proto::BARRIER_OPENED);
  event.set_barrier_id(spec.id);
  event.set_barrier_counter(spec.counter);
  *event.mutable_task() = spec.first_task;
  event.set_detail(absl::StrCat(spec.participants ? spec.participants->size() : 0,
                                " participants, timeout ", spec.timeout.count(), " ms"));
  return event;
}

proto::JobEvent BarrierDoneEvent(const std::string& id, int64_t counter, const absl::Status& result,
                                 const proto::BarrierInfo& end) {
  proto::JobEvent event = Event(result.ok() ? proto::BARRIER_PASSED : proto::BARRIER_FAILED);
  event.set_barrier_id(id);
  event.set_barrier_counter(counter);
  event.set_waited_ms(end.waited_ms());
  if (result.ok()) return event;
  SetError(result, &event);
  for (const auto& task : end.waiting_for()) {
    if (event.waiting_for_size() == kMaxEventWaitingFor) break;
    *event.add_waiting_for() = task;
  }
  event.set_waiting_count(std::max(end.total() - end.arrived(), end.waiting_for_size()));
  return event;
}

proto::JobEvent TaskStuckEvent(const proto::TaskStuck& stuck, const absl::Status& error,
                               uint64_t incarnation) {
  proto::JobEvent event = Event(proto::TASK_STUCK);
  *event.mutable_task() = stuck.task();
  event.set_incarnation(incarnation);
  SetError(error, &event);
  event.set_detail(absl::StrCat("step ", stuck.step()));
  return event;
}

proto::JobEvent PreemptionEvent(const proto::NotifyPreemptionRequest& request, bool first) {
  proto::JobEvent event = Event(proto::PREEMPTION_NOTICED);
  *event.mutable_task() = request.source_task();
  event.set_detail(first ? request.reason()
                         : absl::StrCat(request.reason(), " (the protocol had started already)"));
  return event;
}

// The event log answers (it validates the request and parks it when it waits). A coordinator
// spawned without one (tests, embedders) answers as a log that has no event.
caf::result<proto::WatchEventsResponse> WatchEvents(CoordinatorPointer self,
                                                    const proto::WatchEventsRequest& request) {
  if (self->state.options.events) return self->delegate(self->state.options.events, request);
  proto::WatchEventsResponse none;
  none.set_first_kept_seq(1);
  return none;
}

}  // namespace muster
