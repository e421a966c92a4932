// A key-value directory's durable side, without actors: the replies of applied writes by request
// id (so a write re-sent after a lost connection is answered, not applied twice: kept by every
// leader), and with a state dir the records each change writes (keys; recent history once the
// directory is watched, which resumed watches replay). The directory actor owns one, with the
// gate that holds its replies until their changes are on disk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <optional>
#include <type_traits>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/status/statusor.h>

#include "muster/actors/durability/durable_gate.h"
#include "muster/actors/durability/state_store.h"
#include "muster/actors/kv/store/kv_store.h"
#include "muster/proto/leader_state.pb.h"

namespace muster {

class KvDurable {
 public:
  // Limits, per directory: replies kept per client (and records of them with a state dir);
  // records kept per client of replies it said it had (below its answered_below: their deletes
  // ride with the client's later writes); clients, and replies kept of all of them (beyond either
  // bound, the clients that wrote least recently are forgotten); history events.
  static constexpr size_t kRepliesPerClient = 1024;
  static constexpr size_t kAnsweredRecordsPerClient = 64;
  static constexpr size_t kClients = 65536;
  static constexpr size_t kReplies = 131072;
  static constexpr size_t kHistory = 1024;

  KvDurable() = default;
  explicit KvDurable(StateWriterActor writer) : gate_(std::move(writer)) {}
  // Moved, never copied (the clients' places point into its own list).
  KvDurable(KvDurable&&) = default;
  KvDurable& operator=(KvDurable&&) = default;
  KvDurable(const KvDurable&) = delete;
  KvDurable& operator=(const KvDurable&) = delete;

  bool enabled() const { return gate_.enabled(); }
  DurableGate& gate() { return gate_; }

  // Loads what a restarted leader recovered into `store` and this object. Keys the store
  // refuses (limits lowered since) are skipped; returns how many.
  int Restore(const proto::RecoveredKvDirectory& recovered, KvStore& store);

  // Adds the records of `changes` (made to `store`) to `batch`, and keeps them as history once
  // the directory is watched.
  void Record(const KvStore& store, const KvStore::Changes& changes, StateBatch& batch);
  // The directory has a watch: from now on (and after a restart) its changes are kept as
  // history for resuming watches. Adds the marker to `batch` the first time.
  void StartHistory(const KvStore& store, StateBatch& batch);
  bool keeps_history() const { return history_on_; }

  // The stored reply of an applied write; null when the id is new (or no longer kept).
  const proto::StoredReply* FindReply(const proto::RequestId& id) const;
  // Whether `id` (without a kept reply) is below an answered_below its client sent since: the
  // client had that write's answer and never sends it again, so this is a late copy (a frame of
  // a connection the client had already replaced), not to be applied a second time.
  bool AnsweredBefore(const proto::RequestId& id) const;
  // Keeps the reply of an applied write and forgets the replies of the client's writes below
  // the id's answered_below: the client says it will not send them again. With `records` (a
  // directory with a state dir; null without, on every call) the reply's record is added to it;
  // the records of forgotten replies stay until the client has more than
  // kAnsweredRecordsPerClient of them (or kRepliesPerClient records in all), so that forgetting
  // costs no write of its own: their deletes ride with the client's later writes.
  void RememberReply(const std::string& directory, const proto::RequestId& id,
                     proto::StoredReply reply, StateBatch* records);

  // How many replies are kept now, of every client.
  int64_t kept_replies() const { return static_cast<int64_t>(kept_ + restored_); }

  // Every kept change after `revision` up to `current`. Possible errors: OutOfRange (the
  // history no longer reaches back to `revision`, or `revision` is ahead of `current`).
  absl::StatusOr<std::vector<proto::KeyValueChangeEvent>> ChangesAfter(int64_t revision,
                                                                       int64_t current) const;

 private:
  DurableGate gate_;
  // History is kept only for directories that were ever watched: a write to any other directory
  // costs one record (its key).
  bool history_on_ = false;
  std::deque<proto::KeyValueChangeEvent> history_;
  // Sequence numbers in the order they came, oldest first. Nothing is allocated while it is
  // empty (a std::deque allocates over 500 bytes at once, which every client would pay).
  class SeqQueue {
   public:
    size_t size() const { return seqs_.size() - front_; }
    uint64_t front() const { return seqs_[front_]; }
    void push_back(uint64_t seq) { seqs_.push_back(seq); }
    void pop_front() {
      if (++front_ * 2 < seqs_.size()) return;
      seqs_.erase(seqs_.begin(), seqs_.begin() + static_cast<ptrdiff_t>(front_));
      front_ = 0;
    }
    std::vector<uint64_t>::const_iterator begin() const {
      return seqs_.begin() + static_cast<ptrdiff_t>(front_);
    }
    std::vector<uint64_t>::const_iterator end() const { return seqs_.end(); }

   private:
    std::vector<uint64_t> seqs_;
    size_t front_ = 0;
  };
  struct ClientReplies {
    // The replies the client may still ask for, by sequence number: from its last
    // answered_below on, at most kRepliesPerClient.
    std::map<uint64_t, proto::StoredReply> by_seq;
    // With records: the writes whose replies have a record, in the order they were made, at most
    // kRepliesPerClient (8 bytes each where a kept reply costs a few hundred): every kept reply,
    // and up to kAnsweredRecordsPerClient forgotten ones. Empty without.
    SeqQueue recorded;
    uint64_t answered_below = 0;          // the highest the client sent (up to its write's seq)
    std::list<uint64_t>::iterator place;  // in clients_
    // Loaded by Restore, and not written since: its records include forgotten replies (a
    // restored client's answered_below is not known until it writes), which do not count
    // toward kReplies: a restart must not forget the clients that will re-send their writes.
    bool restored = false;
  };
  // Deletes the client's records beyond its bounds into `records`.
  void TrimRecords(const std::string& directory, uint64_t client, ClientReplies& kept,
                   StateBatch& records);
  // Forgets the client that wrote least recently, and deletes its records (into `records`).
  void ForgetOldestClient(const std::string& directory, StateBatch* records);

  absl::flat_hash_map<uint64_t, ClientReplies> replies_;
  size_t kept_ = 0;      // replies in by_seq, of every client not restored
  size_t restored_ = 0;  // and of the restored clients
  // The clients, the one that wrote least recently first: a client still writing (or one that
  // wrote just before its connection was lost, and will send its writes again) is the last to
  // be forgotten.
  std::list<uint64_t> clients_;
};

}  // namespace muster

namespace muster {

// The StoredReply of a write's outcome.
template <class Response>
proto::StoredReply StoreReply(const absl::StatusOr<Response>& outcome) {
  proto::StoredReply reply;
  *reply.mutable_status() = StoreStatus(outcome.status());
  if (outcome.ok()) reply.set_response(outcome->SerializeAsString());
  return reply;
}

// The outcome a StoredReply holds. Possible errors: the stored one; Internal when the stored
// response does not parse.
template <class Response>
absl::StatusOr<Response> LoadReply(const proto::StoredReply& reply) {
  absl::Status status = LoadStatus(reply.status());
  if (!status.ok()) return status;
  Response response;
  if (!response.ParseFromString(reply.response())) {
    return absl::InternalError("a stored reply of a re-sent write does not parse");
  }
  return response;
}

// A refused compare-and-swap's reply keeps the key's value only up to this size.
inline constexpr size_t kKeptValueBytes = 256;
// Marks a kept reply that left the key's value out, in its status' payloads (an OK status
// carries none otherwise, and LoadStatus drops them).
inline constexpr char kValueLeftOut[] = "muster.kept-reply/value-left-out";

// The reply of `request` as it is kept, small: a compare-and-swap that succeeded leaves out the
// value it set, which the request sent again carries; one that was refused leaves out a value
// over kKeptValueBytes, marked (ReplayedReply puts in the key's value at the re-send).
template <class Response, class Request>
proto::StoredReply KeptReply(const Request& request, absl::StatusOr<Response> outcome) {
  bool left_out = false;
  if constexpr (std::is_same_v<Response, proto::CompareAndSwapResponse>) {
    if (outcome.ok() && outcome->succeeded() && outcome->current() == request.desired()) {
      outcome->clear_current();
    } else if (outcome.ok() && !outcome->succeeded() &&
               outcome->current().size() > kKeptValueBytes) {
      outcome->clear_current();
      left_out = true;
    }
  }
  proto::StoredReply kept = StoreReply(outcome);
  if (left_out) (*kept.mutable_status()->mutable_payloads())[kValueLeftOut] = "";
  return kept;
}

// The kept reply of a write sent again, as KeptReply left it, with what it left out put back.
template <class Response, class Request>
absl::StatusOr<Response> ReplayedReply(const Request& request, const proto::StoredReply& kept,
                                       const KvStore& store) {
  absl::StatusOr<Response> reply = LoadReply<Response>(kept);
  if constexpr (std::is_same_v<Response, proto::CompareAndSwapResponse>) {
    if (reply.ok() && reply->succeeded()) {
      reply->set_current(request.desired());  // what it set (and the key held then)
    } else if (reply.ok() && kept.status().payloads().contains(kValueLeftOut)) {
      const std::string* now = store.Find(request.key());
      reply->set_exists(now != nullptr);
      if (now != nullptr) reply->set_current(*now);
    }
  }
  return reply;
}

// Delivers a value or error `result` through `promise`.
template <class Response>
void DeliverResult(caf::typed_response_promise<Response>& promise,
                   const caf::result<Response>& result) {
  if (result.flag == caf::rt_error) {
    promise.deliver(result.err);
  } else {
    promise.deliver(result.value.template get_as<Response>(0));
  }
}

// Answers the current request with `result` once the gate is idle: at once without pending
// writes (or for a result answered later through a promise of its own).
template <class Response, class Self>
caf::result<Response> AfterDurable(Self* self, DurableGate& gate, caf::result<Response> result) {
  if (gate.idle() || (result.flag != caf::rt_value && result.flag != caf::rt_error)) {
    return result;
  }
  auto promise = self->template make_response_promise<Response>();
  gate.After([promise, result](const absl::Status& written) mutable {
    if (written.ok()) return DeliverResult(promise, result);
    if (!LeavesCallsUnanswered(written)) promise.deliver(ToError(written));
  });
  return promise;
}

}  // namespace muster
