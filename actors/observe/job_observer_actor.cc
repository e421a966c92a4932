#include "muster/actors/observe/job_observer_actor.h"

#include <optional>
#include <utility>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "muster/actors/caf/hardening.h"
#include "muster/actors/observe/snapshot_builder.h"

namespace muster {
namespace {

using Promise = caf::typed_response_promise<JobSnapshotPtr>;

// A coordinator that does not answer a part in this long fails the snapshot (and the waiting
// scrapes with it) instead of keeping the observer collecting.
constexpr auto kPartTimeout = std::chrono::seconds(10);

struct ObserverState {
  static inline const char* name = "muster.job_observer";
  CoordinatorActor coordinator;
  ObserverOptions options;
  caf::actor_clock::time_point started{};
  SnapshotBuilder builder;
  JobSnapshotPtr last;
  caf::actor_clock::time_point last_taken{};
  // While collecting: the waiters, the answers still missing, and the first error.
  std::vector<Promise> waiting;
  int missing = 0;
  caf::error failed;
};

using ObserverPointer = JobObserverActor::stateful_pointer<ObserverState>;

JobObserverActor::behavior_type Idle(ObserverPointer self);

int64_t Millis(caf::timespan span) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(span).count();
}

// One part answered (or failed): the last one completes the snapshot and answers every waiter.
void PartDone(ObserverPointer self) {
  auto& st = self->state;
  if (--st.missing > 0) return;
  std::vector<Promise> waiting = std::move(st.waiting);
  st.waiting.clear();
  if (st.failed) {
    caf::error failed = std::move(st.failed);
    st.failed = caf::error{};
    st.builder.Start();
    for (Promise& promise : waiting) promise.deliver(failed);
  } else {
    auto now = self->clock().now();
    st.last = st.builder.Build(st.options.leader_incarnation,
                               st.options.start_unix_ms + Millis(now - st.started),
                               Millis(now - st.started));
    st.last_taken = now;
    for (Promise& promise : waiting) promise.deliver(st.last);
  }
  self->become(Idle(self));
}

// Asks the coordinator for one part; `take` stores its answer. A part that is `optional` may
// fail without failing the snapshot (a coordinator spawned without an event log).
template <class Response, class Request, class Take>
void Ask(ObserverPointer self, Request request, Take take, bool optional = false) {
  ++self->state.missing;
  self->request(self->state.coordinator, kPartTimeout, std::move(request))
      .then(
          [self, take](Response& response) {
            take(std::move(response));
            PartDone(self);
          },
          [self, optional](caf::error& error) {
            if (!optional && !self->state.failed) self->state.failed = std::move(error);
            PartDone(self);
          });
}

JobObserverActor::behavior_type Collecting(ObserverPointer self) {
  return {
      [self](snapshot_atom) -> caf::result<JobSnapshotPtr> {
        auto promise = self->make_response_promise<JobSnapshotPtr>();
        self->state.waiting.push_back(promise);
        return promise;
      },
  };
}

caf::result<JobSnapshotPtr> Collect(ObserverPointer self) {
  auto& st = self->state;
  auto promise = self->make_response_promise<JobSnapshotPtr>();
  st.waiting.push_back(promise);
  st.builder.Start();
  st.missing = 1;  // released below, once every request is out
  SnapshotBuilder& builder = st.builder;
  Ask<proto::TaskColumns>(self, proto::GetTaskColumnsRequest(),
                          [&builder](proto::TaskColumns r) { builder.SetTasks(std::move(r)); });
  Ask<proto::GetBarriersResponse>(
      self, proto::GetBarriersRequest(),
      [&builder](proto::GetBarriersResponse r) { builder.SetBarriers(std::move(r)); });
  Ask<proto::GetKvStatsResponse>(
      self, proto::GetKvStatsRequest(),
      [&builder](proto::GetKvStatsResponse r) { builder.SetKvStats(std::move(r)); });
  proto::WatchEventsRequest events;  // the newest ones: a page shows the last few
  events.set_after_seq(builder.last_event_seq());
  events.set_max_events(st.options.recent_events);
  events.set_newest(true);
  Ask<proto::WatchEventsResponse>(
      self, std::move(events), [&builder](proto::WatchEventsResponse r) { builder.AddEvents(r); },
      /*optional=*/true);
  self->become(Collecting(self));
  PartDone(self);  // the `missing = 1` above
  return promise;
}

JobObserverActor::behavior_type Idle(ObserverPointer self) {
  return {
      [self](snapshot_atom) -> caf::result<JobSnapshotPtr> {
        auto& st = self->state;
        if (st.last && self->clock().now() - st.last_taken < st.options.max_age) return st.last;
        return Collect(self);
      },
  };
}

JobObserverActor::behavior_type ObserverBehavior(ObserverPointer self, CoordinatorActor coordinator,
                                                 ObserverOptions options) {
  DropUnexpectedMessages(self);
  auto& st = self->state;
  st.coordinator = std::move(coordinator);
  st.builder = SnapshotBuilder(options.recent_events);
  st.options = std::move(options);
  st.started = self->clock().now();
  // The observer ends with its coordinator.
  self->monitor(st.coordinator);
  self->set_down_handler([self](caf::down_msg& down) { self->quit(down.reason); });
  return Idle(self);
}

}  // namespace

JobObserverActor SpawnJobObserver(caf::actor_system& system, CoordinatorActor coordinator,
                                  ObserverOptions options) {
  return system.spawn(ObserverBehavior, std::move(coordinator), std::move(options));
}

}  // namespace muster
