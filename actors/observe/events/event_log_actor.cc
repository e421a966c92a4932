#include "muster/actors/observe/events/event_log_actor.h"

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include <absl/container/flat_hash_map.h>
#include <absl/strings/str_cat.h>
#include <caf/actor_clock.hpp>
#include <caf/exit_reason.hpp>
#include <caf/system_messages.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "muster/actors/caf/hardening.h"
#include "muster/actors/caf/placement.h"
#include "muster/messages/status/status_codec.h"

namespace muster {
namespace {

using WatchPromise = caf::typed_response_promise<proto::WatchEventsResponse>;

struct ParkedWatch {
  int64_t after_seq = 0;
  int32_t max_events = 0;
  WatchPromise promise;
};

struct EventLogState {
  static inline const char* name = "muster.event_log";
  std::optional<EventLog> log;
  absl::flat_hash_map<uint64_t, ParkedWatch> parked;  // by the number of its timer
  uint64_t next_watch = 0;
  // The event file: the lines not handed to the writer yet, and whether a batch is on its way.
  EventWriterActor writer;
  std::string pending;
  bool writing = false;
  uint64_t unwritten = 0;  // lines dropped since the writer last caught up
  bool stopping = false;
};

using EventLogPointer = EventLogActor::stateful_pointer<EventLogState>;

int64_t MonotonicNs(EventLogPointer self) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             self->clock().now().time_since_epoch())
      .count();
}

void Quit(EventLogPointer self) {
  if (self->state.writer) self->send_exit(self->state.writer, caf::exit_reason::user_shutdown);
  self->quit();
}

// Hands the pending lines to the writer, unless a batch is on its way already (its answer
// sends the next one).
void Flush(EventLogPointer self) {
  auto& st = self->state;
  if (st.writing || st.pending.empty() || !st.writer) {
    if (st.stopping && !st.writing) Quit(self);
    return;
  }
  st.writing = true;
  std::string batch = std::move(st.pending);
  st.pending.clear();
  self->request(st.writer, caf::infinite, event_append_atom::value, std::move(batch))
      .then(
          [self](bool) {
            auto& st = self->state;
            st.writing = false;
            if (st.unwritten > 0) {
              std::fprintf(stderr,
                           "muster: the event file fell behind; %llu events were not written to "
                           "it (muster events still shows the last %zu)\n",
                           static_cast<unsigned long long>(st.unwritten), kEventLogCapacity);
              st.unwritten = 0;
            }
            Flush(self);
          },
          [self](caf::error& error) {
            auto& st = self->state;
            std::fprintf(stderr, "muster: %s\n", StatusText(ToStatus(error)).c_str());
            st.writing = false;
            st.pending.clear();
            st.writer = nullptr;  // memory only from now on; the writer has stopped or failed
            if (st.stopping) Quit(self);
          });
}

void OnEvent(EventLogPointer self, proto::JobEvent& event) {
  if (!FromThisNode(self)) return;  // only this leader's actors tell what happened
  auto& st = self->state;
  const proto::JobEvent& kept = st.log->Append(std::move(event), MonotonicNs(self));
  for (auto& [id, watch] : st.parked) {
    watch.promise.deliver(st.log->After(watch.after_seq, watch.max_events));
  }
  st.parked.clear();
  if (!st.writer || st.stopping) return;
  if (st.pending.size() >= kMaxPendingEventBytes) {
    ++st.unwritten;
    return;
  }
  st.pending += EventJson(kept);
  st.pending.push_back('\n');
  Flush(self);
}

absl::Status CheckWatch(const proto::WatchEventsRequest& request) {
  if (request.after_seq() < 0 || request.wait_ms() < 0 || request.max_events() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "WatchEvents with after_seq ", request.after_seq(), ", wait_ms ", request.wait_ms(),
        " and max_events ", request.max_events(),
        ": none may be negative (after_seq 0 reads from the oldest event kept, wait_ms 0 answers "
        "at once, max_events 0 means ",
        kMaxWatchEvents, ")"));
  }
  if (request.wait_ms() > kMaxWatchWaitMs || request.max_events() > kMaxWatchEvents) {
    return absl::InvalidArgumentError(absl::StrCat(
        "WatchEvents with wait_ms ", request.wait_ms(), " and max_events ", request.max_events(),
        ": a call waits at most ", kMaxWatchWaitMs, " ms and returns at most ", kMaxWatchEvents,
        " events; call again with the last seq it returned for more"));
  }
  return absl::OkStatus();
}

caf::result<proto::WatchEventsResponse> OnWatch(EventLogPointer self,
                                                const proto::WatchEventsRequest& request) {
  auto& st = self->state;
  if (absl::Status valid = CheckWatch(request); !valid.ok()) return ToError(valid);
  const int32_t max_events = request.max_events() > 0 ? request.max_events() : kMaxWatchEvents;
  // At once: events to return, no wait asked for, or an after_seq ahead of this log.
  if (st.log->HasAfter(request.after_seq()) || request.wait_ms() == 0 ||
      request.after_seq() > st.log->last_seq() || st.stopping) {
    return st.log->After(request.after_seq(), max_events, request.newest());
  }
  if (st.parked.size() >= kMaxParkedWatches) {
    return ToError(absl::ResourceExhaustedError(absl::StrCat(
        "WatchEvents: ", kMaxParkedWatches,
        " calls wait for the next event of this leader already; call with wait_ms 0, or stop "
        "some of the watchers (muster events --follow)")));
  }
  const uint64_t id = st.next_watch++;
  WatchPromise promise = self->make_response_promise<proto::WatchEventsResponse>();
  st.parked.emplace(id, ParkedWatch{request.after_seq(), max_events, promise});
  self->delayed_send(self, std::chrono::milliseconds(request.wait_ms()), deadline_atom::value, id);
  return promise;
}

void OnDeadline(EventLogPointer self, uint64_t id) {
  if (self->current_sender() != self->ctrl()) return;
  auto& st = self->state;
  auto it = st.parked.find(id);
  if (it == st.parked.end()) return;  // answered by an event already
  it->second.promise.deliver(st.log->After(it->second.after_seq, it->second.max_events));
  st.parked.erase(it);
}

// Answers the parked calls with what there is, lets the writer finish, then stops.
void Stop(EventLogPointer self) {
  auto& st = self->state;
  if (st.stopping) return;
  st.stopping = true;
  for (auto& [id, watch] : st.parked) {
    watch.promise.deliver(st.log->After(watch.after_seq, watch.max_events));
  }
  st.parked.clear();
  Flush(self);
}

EventLogActor::behavior_type EventLogBehavior(EventLogPointer self, EventLogOptions options) {
  HostOnNetworkThread(self);
  DropErrorMessages(self);
  DropUnexpectedMessages(self);
  auto& st = self->state;
  st.log.emplace(options.wall_start, MonotonicNs(self), options.capacity);
  st.writer = std::move(options.writer);
  self->set_exit_handler([self](caf::exit_msg&) { Stop(self); });
  return {
      [self](proto::JobEvent& event) { OnEvent(self, event); },
      [self](const proto::WatchEventsRequest& request) { return OnWatch(self, request); },
      [self](deadline_atom, uint64_t id) { OnDeadline(self, id); },
  };
}

}  // namespace

EventLogActor SpawnEventLog(caf::actor_system& system, EventLogOptions options) {
  return system.spawn(EventLogBehavior, std::move(options));
}

}  // namespace muster
