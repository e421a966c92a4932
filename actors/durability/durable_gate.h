// What an actor with durable state has sent to the state writer and what is on disk: a reply
// that reveals a change (or depends on one) waits until every batch sent before it is durable.
// Without a writer everything runs at once. Plain class; the owning actor calls Persist().
//
//   IDLE (sent == durable: After() runs at once) --Persist--> WAITING (After() queues)
//   WAITING --writer acked the last batch--> IDLE (queued work runs in order)
//   any --writer failed--> FAILED (queued work, and all work after, runs with the error: the
//                                  writer fails every later batch too, and a change it lost
//                                  must not be revealed by a later reply)
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <utility>

#include <absl/status/status.h>
#include <absl/strings/cord.h>
#include <absl/strings/string_view.h>
#include <caf/typed_response_promise.hpp>

#include "muster/actors/durability/state_writer_actor.h"
#include "muster/messages/status/status_codec.h"

namespace muster {

// The exit reason a leader with a state dir gives its children when it stops: a stop is a pause
// then, like a crash, so waiting calls are not answered (their agents re-send them to the
// restarted leader) instead of failing with Cancelled or Aborted.
inline caf::error LeaderPauseReason() {
  return ToError(absl::UnavailableError("the Muster leader stopped; its state dir keeps the job"));
}
inline bool IsLeaderPause(const caf::error& reason) { return reason == LeaderPauseReason(); }

// A failed write after which the leader stops as a pause, marked so by its store (an HA leader's
// etcd store: the leader then steps down): the calls that wait on it are left unanswered, for
// their agents to re-send to the next leader, which has what was written, instead of failing
// with the write's error. (Without the mark a failed write fails the calls: a leader with a
// state dir has no next leader to send them to.)
inline constexpr absl::string_view kPausesLeaderPayload = "type.muster/PausesLeader";
inline absl::Status PausesLeader(absl::Status status) {
  if (!status.ok()) status.SetPayload(kPausesLeaderPayload, absl::Cord("1"));
  return status;
}
inline bool LeavesCallsUnanswered(const absl::Status& written) {
  return written.GetPayload(kPausesLeaderPayload).has_value();
}

class DurableGate {
 public:
  using Work = std::function<void(const absl::Status&)>;

  DurableGate() = default;
  explicit DurableGate(StateWriterActor writer) : writer_(std::move(writer)) {}

  bool enabled() const { return static_cast<bool>(writer_); }
  // False once a write failed: nothing may be answered as durable after that.
  bool idle() const { return durable_ == sent_ && failed_.ok(); }

  // Runs `work` once everything persisted so far is durable (at once when it is); with the
  // error at once after a failed write.
  void After(Work work) {
    if (!failed_.ok()) return work(failed_);
    if (idle()) return work(absl::OkStatus());
    queued_.emplace_back(sent_, std::move(work));
  }

  // Sends `batch` to the writer from actor `self` (nothing without a writer or for an empty
  // batch); After() then waits for it. One write per actor is in flight at a time: batches made
  // meanwhile travel together in the next one (a group commit before the writer's own).
  template <class Self>
  void Persist(Self* self, StateBatch batch) {
    if (!enabled() || batch.empty()) return;
    ++sent_;
    waiting_.Append(std::move(batch));
    if (!in_flight_) Flush(self);
  }

  // Delivers `response` through `promise` once durable (an error if the write failed; nothing
  // when the failure pauses the leader: LeavesCallsUnanswered).
  template <class Response>
  void Deliver(caf::typed_response_promise<Response> promise, Response response) {
    After([promise, response = std::move(response)](const absl::Status& status) mutable {
      if (status.ok()) {
        promise.deliver(std::move(response));
      } else if (!LeavesCallsUnanswered(status)) {
        promise.deliver(ToError(status));
      }
    });
  }

 private:
  // Sends the batches waiting, up to the last one made.
  template <class Self>
  void Flush(Self* self) {
    uint64_t seq = sent_;
    in_flight_ = true;
    StateBatch batch = std::move(waiting_);
    waiting_ = StateBatch();
    self->request(writer_, caf::infinite, persist_atom::value, std::move(batch))
        .then([this, self, seq](bool) { Done(self, seq, absl::OkStatus()); },
              [this, self, seq](caf::error& error) {
                // Not the store's answer but CAF's (the writer is gone: the leader stops, as
                // a pause when it has a state dir): the calls are left for the next leader.
                absl::Status status = ToStatus(error);
                if (error.category() != kStatusCategory) status = PausesLeader(std::move(status));
                Done(self, seq, status);
              });
  }

  template <class Self>
  void Done(Self* self, uint64_t seq, const absl::Status& status) {
    in_flight_ = false;
    Acked(seq, status);
    if (!in_flight_ && !waiting_.empty()) Flush(self);
  }

  void Acked(uint64_t seq, const absl::Status& status) {
    if (seq > durable_) durable_ = seq;
    if (!status.ok() && failed_.ok()) failed_ = status;
    while (!queued_.empty() && (queued_.front().first <= durable_ || !status.ok())) {
      Work work = std::move(queued_.front().second);
      queued_.pop_front();
      work(status);
    }
  }

  StateWriterActor writer_;
  uint64_t sent_ = 0;
  uint64_t durable_ = 0;
  bool in_flight_ = false;  // a write to the writer awaits its answer
  StateBatch waiting_;      // the batches made since, for the next write
  absl::Status failed_;     // the first failed write's error
  std::deque<std::pair<uint64_t, Work>> queued_;
};

}  // namespace muster
