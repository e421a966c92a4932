// How a key-value directory counts its requests in the leader's metrics (LeaderMetrics): each
// with the verb, the answer its client gets and the time from its arrival to that answer, after
// the changes before it are on disk. `Self` is a directory actor whose state has `metrics`
// (null: nothing counted, and no clock is read) and `durable` (its KvDurable).
#pragma once

#include <absl/status/status.h>
#include <caf/actor_clock.hpp>
#include <caf/result.hpp>

#include "muster/actors/durability/kv_durable.h"
#include "muster/actors/observe/leader_metrics.h"
#include "muster/messages/status/status_codec.h"

namespace muster {

// When a request arrived (nothing is read when the directory counts nothing).
template <class Self>
caf::actor_clock::time_point RequestArrival(Self* self) {
  return self->state.metrics ? self->clock().now() : caf::actor_clock::time_point{};
}

template <class Response>
absl::StatusCode ResultCode(const caf::result<Response>& result) {
  return result.flag == caf::rt_error ? ToStatus(result.err).code() : absl::StatusCode::kOk;
}

// Answers a request that arrived at `start` with `result` once the changes before it are on
// disk (AfterDurable), and counts it then, with the answer its client gets (the write's error
// when the disk failed). A parked call (a promise) is counted when it is answered.
template <class Self, class Response>
caf::result<Response> CountedReply(Self* self, KvVerb verb, caf::actor_clock::time_point start,
                                   caf::result<Response> result) {
  DurableGate& gate = self->state.durable.gate();
  LeaderMetrics* metrics = self->state.metrics.get();
  if (metrics == nullptr || result.flag == caf::rt_delegated) {
    return AfterDurable(self, gate, std::move(result));
  }
  absl::StatusCode code = ResultCode(result);
  if (gate.idle()) {
    metrics->KvDone(verb, code, self->clock().now() - start);
    return result;
  }
  gate.After([self, verb, start, code](const absl::Status& written) {
    self->state.metrics->KvDone(verb, written.ok() ? code : written.code(),
                                self->clock().now() - start);
  });
  return AfterDurable(self, gate, std::move(result));
}

// A request handled by `handler`, answered and counted by CountedReply.
template <class Self, class Handler>
auto Counted(Self* self, KvVerb verb, Handler handler) {
  auto start = RequestArrival(self);
  return CountedReply(self, verb, start, handler());
}

// A request answered at once, whatever waits for the disk (StopWatchKey), counted now.
template <class Self, class Handler>
auto CountedNow(Self* self, KvVerb verb, Handler handler) {
  auto start = RequestArrival(self);
  auto result = handler();
  if (self->state.metrics && result.flag != caf::rt_delegated) {
    self->state.metrics->KvDone(verb, ResultCode(result), self->clock().now() - start);
  }
  return result;
}

}  // namespace muster
