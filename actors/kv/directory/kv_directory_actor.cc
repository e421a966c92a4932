#include "muster/actors/kv/directory/kv_directory_actor.h"

#include <chrono>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <absl/time/time.h>
#include <caf/result.hpp>

#include "muster/actors/caf/hardening.h"
#include "muster/actors/caf/placement.h"
#include "muster/actors/durability/kv_durable.h"
#include "muster/actors/kv/directory/kv_counting.h"
#include "muster/actors/kv/directory/kv_directory_state.h"
#include "muster/actors/kv/directory/kv_subscribers.h"
#include "muster/actors/kv/store/kv_store.h"
#include "muster/actors/observe/leader_metrics.h"
#include "muster/messages/status/caf_text.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/messages/vocabulary/kv_calls.h"

namespace muster {
namespace kv_directory_internal {

using Kind = proto::KeyValueChangeEvent;

proto::KeyValueEntry Entry(const std::string& key, const std::string& value) {
  proto::KeyValueEntry entry;
  entry.set_key(key);
  entry.set_value(value);
  return entry;
}

// Counts a parked call answered now, with `code`, after its wait.
void CountWaiter(KvDirectoryPointer self, const KvWaiter& waiter, absl::StatusCode code) {
  if (!self->state.metrics) return;
  self->state.metrics->KvDone(waiter.waits_for_keys() ? KvVerb::kWaitForKeys : KvVerb::kGetKeyValue,
                              code, self->clock().now() - waiter.parked_at);
}

// Drops the monitor of a peer that has no waiter and no watch left.

void ReleasePeer(KvDirectoryPointer self, const caf::actor_addr& peer) {
  if (!self->state.subscribers.Knows(peer)) self->demonitor(peer);
}

void AnswerGetters(KvDirectoryPointer self, const std::string& key, const std::string& value) {
  for (KvWaiter& waiter : self->state.subscribers.TakeKey(key)) {
    proto::GetKeyValueResponse response;
    *response.mutable_kv() = Entry(key, value);
    waiter.promise.deliver(std::move(response));
    CountWaiter(self, waiter, absl::StatusCode::kOk);
    ReleasePeer(self, waiter.requester);
  }
}

void NotifyWatchers(KvDirectoryPointer self, const proto::KeyValueChangeEvent& change) {
  self->state.subscribers.ForEachWatcher(
      change.key(), [&](absl::string_view watched, const KvWatcherActor& watcher) {
        proto::KeyValueChangeEvent event = change;
        event.set_watched_key(std::string(watched));
        self->send(watcher, std::move(event));
      });
}

proto::WaitForKeysResponse KeysUnder(KvDirectoryPointer self, const std::string& directory) {
  proto::WaitForKeysResponse response;
  response.set_directory_key(directory);
  auto entries = self->state.store.List(directory);
  if (entries.ok()) {
    for (proto::KeyValueEntry& entry : *entries) *response.add_kv() = std::move(entry);
  }
  return response;
}

// Answers the WaitForKeys calls that a new key under their directory completes.
void AnswerDirWaiters(KvDirectoryPointer self, const std::string& key) {
  const KvStore& store = self->state.store;
  auto ready = self->state.subscribers.TakeReadyDirs(
      key, [&](absl::string_view directory) { return store.CountUnder(directory); });
  for (KvWaiter& waiter : ready) {
    waiter.dir_promise.deliver(KeysUnder(self, waiter.key));
    CountWaiter(self, waiter, absl::StatusCode::kOk);
    ReleasePeer(self, waiter.requester);
  }
}

void PublishNow(KvDirectoryPointer self, const KvStore::Changes& changes) {
  for (const proto::KeyValueChangeEvent& change : changes) {
    NotifyWatchers(self, change);
    if (change.kind() != Kind::DELETED) AnswerGetters(self, change.key(), change.value());
    if (change.kind() == Kind::INSERTED) AnswerDirWaiters(self, change.key());
  }
}

// Tells watchers about each change, in order, and answers the getters of keys that appeared.
// With a state dir the changes are recorded first (with `batch`, in the same atomic write), and
// published once on disk.
void Publish(KvDirectoryPointer self, const KvStore::Changes& changes, StateBatch batch = {}) {
  KvDurable& durable = self->state.durable;
  if (durable.enabled()) {
    durable.Record(self->state.store, changes, batch);
    durable.gate().Persist(self, std::move(batch));
  }
  if (durable.gate().idle()) return PublishNow(self, changes);
  durable.gate().After([self, changes](const absl::Status& written) {
    if (written.ok()) PublishNow(self, changes);
  });
}

// The outcome of a key-value request as its reply.
template <class Response>
caf::result<Response> Answer(absl::StatusOr<Response> outcome) {
  if (!outcome.ok()) return ToKvError(outcome.status());
  return *std::move(outcome);
}

// The refusal of a late copy of a write its client had the answer of (KvDurable::AnsweredBefore).
template <class Request>
absl::Status LateCopy(const Request& request) {
  std::string key;
  if constexpr (requires { request.kv(); }) {
    key = request.kv().key();
  } else {
    key = request.key();
  }
  return absl::AbortedError(absl::StrCat(
      "not applied: write ", request.request_id().seq(), " of key \"", key,
      "\" is a late copy of one its agent already had the answer of (a frame of a connection it "
      "had replaced); nothing to do"));
}

// A write: applied by `apply` (which fills the changes it made), published, and answered once
// recorded. With a request id a write already applied is answered from its kept reply, by
// every leader (a write re-sent after a lost connection may reach the leader that applied it,
// state dir or not), refusals and errors too: a re-sent write is never evaluated again, so the
// agent's pending writes keep their order; with a state dir the reply is recorded with the
// change. A copy of a write that arrives after its client said it had the answer is refused.
template <class Response, class Request, class Apply>
caf::result<Response> Write(KvDirectoryPointer self, KvVerb verb, const Request& request,
                            Apply apply) {
  auto start = RequestArrival(self);
  KvDurable& durable = self->state.durable;
  const bool dedup = request.request_id().client() != 0;
  if (dedup) {
    if (const proto::StoredReply* stored = durable.FindReply(request.request_id())) {
      return CountedReply(self, verb, start,
                          Answer(ReplayedReply<Response>(request, *stored, self->state.store)));
    }
    if (durable.AnsweredBefore(request.request_id())) {
      return CountedReply(self, verb, start, Answer(absl::StatusOr<Response>(LateCopy(request))));
    }
  }
  KvStore::Changes changes;
  absl::StatusOr<Response> outcome = apply(changes);
  // The reply is recorded with the changes, atomically: a re-sent write finds both or neither.
  StateBatch batch;
  if (dedup) {
    durable.RememberReply(self->state.store.directory(), request.request_id(),
                          KeptReply(request, outcome), durable.enabled() ? &batch : nullptr);
  }
  Publish(self, changes, std::move(batch));
  return CountedReply(self, verb, start, Answer(std::move(outcome)));
}

// The owner an ephemeral write names (stamped by the coordinator); nullopt for a persistent one.
template <class Request>
std::optional<KvOwner> OwnerOf(const Request& request) {
  if constexpr (requires { request.ephemeral(); }) {
    if (!request.ephemeral() || request.owner_incarnation() == 0) return std::nullopt;
    return KvOwner{TaskName(request.source_task()), request.owner_incarnation()};
  } else {
    return std::nullopt;  // a write that cannot be ephemeral
  }
}

const KvOwner* Ptr(const std::optional<KvOwner>& owner) { return owner ? &*owner : nullptr; }

// Fails a parked call of either kind with `status`.
void FailWaiter(KvDirectoryPointer self, KvWaiter& waiter, const absl::Status& status) {
  CountWaiter(self, waiter, status.code());
  if (waiter.waits_for_keys()) {
    waiter.dir_promise.deliver(ToKvError(status));
  } else {
    waiter.promise.deliver(ToKvError(status));
  }
}

// Arms the deadline of parked call `id`, unless it waits without one.
void ArmDeadline(KvDirectoryPointer self, uint64_t id, int64_t timeout_ms) {
  if (timeout_ms <= 0) return;
  self->delayed_send(self, std::chrono::milliseconds(timeout_ms), deadline_atom::value, id);
}

caf::result<proto::GetKeyValueResponse> ParkGetter(KvDirectoryPointer self,
                                                   const proto::GetKeyValueRequest& request) {
  auto requester = caf::actor_cast<caf::actor_addr>(self->current_sender());
  if (!requester) {
    return ToKvError(absl::InvalidArgumentError(
        absl::StrCat("GetKeyValue for key ", KeyForMessage(request.key()),
                     " came without a sender to answer; send it as a request")));
  }
  int64_t timeout_ms = request.timeout_in_ms();
  // The router refuses these; a directory used without it still never overflows the clock.
  if (timeout_ms < 0 || timeout_ms > kMaxGetTimeoutMs) timeout_ms = 0;
  // Monitor first: making the promise takes the sender out of the current message.
  if (!self->state.subscribers.Knows(requester)) self->monitor(self->current_sender());
  auto promise = self->make_response_promise<proto::GetKeyValueResponse>();
  KvWaiter waiter{request.key(), requester, timeout_ms, promise};
  waiter.parked_at = self->clock().now();
  uint64_t id = self->state.subscribers.Park(std::move(waiter));
  ArmDeadline(self, id, timeout_ms);
  return promise;
}

caf::result<proto::GetKeyValueResponse> GetKeyValue(KvDirectoryPointer self,
                                                    const proto::GetKeyValueRequest& request) {
  const KvStore& store = self->state.store;
  if (absl::Status status = store.CheckKey(request.key()); !status.ok()) return ToKvError(status);
  const std::string* value = store.Find(request.key());
  if (value == nullptr) return ParkGetter(self, request);
  proto::GetKeyValueResponse response;
  *response.mutable_kv() = Entry(request.key(), *value);
  return response;
}

caf::result<proto::WaitForKeysResponse> WaitForKeys(KvDirectoryPointer self,
                                                    const proto::WaitForKeysRequest& request) {
  const KvStore& store = self->state.store;
  const std::string& directory = request.directory_key();
  if (absl::Status status = store.CheckKey(directory); !status.ok()) return ToKvError(status);
  if (absl::Status status = CheckWaitForKeys(request, store.limits()); !status.ok()) {
    return ToKvError(status);
  }
  if (store.CountUnder(directory) >= request.count()) return KeysUnder(self, directory);
  auto requester = caf::actor_cast<caf::actor_addr>(self->current_sender());
  if (!requester) {
    return ToKvError(absl::InvalidArgumentError(
        absl::StrCat("WaitForKeys of ", KeyForMessage(directory),
                     " came without a sender to answer; send it as a request")));
  }
  if (!self->state.subscribers.Knows(requester)) self->monitor(self->current_sender());
  KvWaiter waiter{
      directory, requester,       request.timeout_in_ms(),
      {},        request.count(), self->make_response_promise<proto::WaitForKeysResponse>()};
  waiter.parked_at = self->clock().now();
  auto promise = waiter.dir_promise;
  uint64_t id = self->state.subscribers.Park(std::move(waiter));
  ArmDeadline(self, id, request.timeout_in_ms());
  return promise;
}

void DropOwner(KvDirectoryPointer self, const std::string& task, uint64_t incarnation) {
  KvStore::Changes changes;
  self->state.store.DropOwner(KvOwner{task, incarnation}, changes);
  Publish(self, changes);
}

void CancelGets(KvDirectoryPointer self, const std::string& key) {
  auto requester = caf::actor_cast<caf::actor_addr>(self->current_sender());
  std::vector<KvWaiter> cancelled = self->state.subscribers.TakeRequesterKey(requester, key);
  for (KvWaiter& waiter : cancelled) {
    CountWaiter(self, waiter, absl::StatusCode::kCancelled);
    waiter.promise.deliver(ToKvError(absl::CancelledError(
        absl::StrCat("GetKeyValue for key ", KeyForMessage(key), " was cancelled by its caller"))));
  }
  if (!cancelled.empty()) ReleasePeer(self, requester);
}

void ExpireGet(KvDirectoryPointer self, uint64_t waiter_id) {
  if (self->current_sender().get() != self->ctrl()) return;  // only our own timers
  std::optional<KvWaiter> waiter = self->state.subscribers.TakeId(waiter_id);
  if (!waiter) return;  // answered or withdrawn before its deadline
  absl::Duration waited = absl::Milliseconds(waiter->timeout_ms);
  if (waiter->waits_for_keys()) {
    FailWaiter(self, *waiter,
               absl::DeadlineExceededError(
                   absl::StrCat("WaitForKeys timed out after ", absl::FormatDuration(waited),
                                " with ", self->state.store.CountUnder(waiter->key), " of ",
                                waiter->count, " keys under ", KeyForMessage(waiter->key),
                                "; check the tasks that should write them, or give the call a "
                                "longer timeout (WaitForKeys(directory, count, timeout); Python: "
                                "wait_for_keys(..., timeout=))")));
  } else {
    FailWaiter(self, *waiter,
               absl::DeadlineExceededError(
                   absl::StrCat("GetKeyValue timed out with key: ", KeyForMessage(waiter->key),
                                " and duration: ", absl::FormatDuration(waited),
                                "; nothing inserted the key in time: check its writer, or wait "
                                "longer (muster kv get --wait --timeout D; Python: "
                                "get_key_value(key, timeout=); C++: GetKeyValue(key, timeout))")));
  }
  ReleasePeer(self, waiter->requester);
}

// Fails every parked call when the directory stops.
void CancelAllGets(KvDirectoryPointer self, const caf::error& reason) {
  for (KvWaiter& waiter : self->state.subscribers.TakeAll()) {
    FailWaiter(self, waiter,
               absl::CancelledError(
                   absl::StrCat("key-value directory ", self->state.store.directory(), " stopped (",
                                DescribeCafError(reason), ") while ",
                                waiter.waits_for_keys() ? "WaitForKeys waited for keys under "
                                                        : "GetKeyValue waited for key ",
                                KeyForMessage(waiter.key), "; retry once the service is back")));
  }
}

caf::result<int64_t, int64_t, int64_t, int64_t> Stats(KvDirectoryPointer self) {
  const KvSubscribers& subscribers = self->state.subscribers;
  return caf::make_result(self->state.store.size(), subscribers.num_waiters(),
                          subscribers.num_watches(), subscribers.num_peers());
}

// The directory's handler of a key-value call of MUSTER_KV_CALLS, counted under its verb.
// GetKeyValue and WaitForKeys may wait for keys to come; every other call is the store's: a
// write (its request has a request id) through Write, a read at once.
template <class Request>
auto KvCall(KvDirectoryPointer self) {
  using Response = KvCallResponse<Request>;
  constexpr KvVerb verb = KvVerbOf<Request>();
  return [self](const Request& request) -> caf::result<Response> {
    if constexpr (std::is_same_v<Request, proto::GetKeyValueRequest>) {
      return Counted(self, verb, [&] { return GetKeyValue(self, request); });
    } else if constexpr (std::is_same_v<Request, proto::WaitForKeysRequest>) {
      return Counted(self, verb, [&] { return WaitForKeys(self, request); });
    } else if constexpr (requires { request.request_id(); }) {
      return Write<Response>(self, verb, request, [&](KvStore::Changes& changes) {
        std::optional<KvOwner> owner = OwnerOf(request);
        return self->state.store.Apply(request, changes, Ptr(owner));
      });
    } else {
      return Counted(self, verb, [&] { return Answer(self->state.store.Read(request)); });
    }
  };
}

// The handlers of every call of MUSTER_KV_CALLS, as a tuple.
auto KvCalls(KvDirectoryPointer self) {
#define MUSTER_KV_DIRECTORY_CALL(Verb, label) std::make_tuple(KvCall<proto::Verb##Request>(self)),
  return std::tuple_cat(MUSTER_KV_CALLS(MUSTER_KV_DIRECTORY_CALL) std::tuple<>());
#undef MUSTER_KV_DIRECTORY_CALL
}

proto::KvDirectoryStats DirectoryStats(KvDirectoryPointer self) {
  const KvSubscribers& subscribers = self->state.subscribers;
  proto::KvDirectoryStats stats;
  stats.set_directory(self->state.store.directory());
  stats.set_keys(self->state.store.size());
  stats.set_value_bytes(self->state.store.bytes());
  stats.set_parked_gets(subscribers.num_waiters());
  stats.set_watches(subscribers.num_watches());
  stats.set_kept_replies(self->state.durable.kept_replies());
  return stats;
}

KvDirectoryActor::behavior_type KvDirectoryBehavior(KvDirectoryPointer self, std::string directory,
                                                    KvLimits limits, KvDurability durability,
                                                    std::shared_ptr<LeaderMetrics> metrics) {
  HostOnNetworkThread(self);
  DropUnexpectedMessages(self);
  self->state.metrics = std::move(metrics);
  self->state.store = KvStore(std::move(directory), limits);
  self->state.durable = KvDurable(std::move(durability.writer));
  if (durability.recovered && durability.directory_index >= 0) {
    self->state.durable.Restore(durability.recovered->directories(durability.directory_index),
                                self->state.store);
  }
  self->set_down_handler(
      [=](caf::down_msg& down) { self->state.subscribers.DropPeer(down.source); });
  self->set_exit_handler([=](caf::exit_msg& exit) {
    // A durable leader's stop is a pause: parked calls are re-sent to the restarted leader.
    if (!IsLeaderPause(exit.reason)) CancelAllGets(self, exit.reason);
    self->quit(exit.reason);
  });
  // The calls of MUSTER_KV_CALLS come from KvCalls: kv_calls.h lists them.
  return std::apply(
      [=](auto... kv_calls) -> KvDirectoryActor::behavior_type {
        return {
            kv_calls...,
            [=](const proto::WatchKeyRequest& request, const KvWatcherActor& watcher) {
              return Counted(self, KvVerb::kWatchKey,
                             [&] { return WatchKey(self, request, watcher); });
            },
            [=](const proto::StopWatchKeyRequest& request, const KvWatcherActor& watcher) {
              return CountedNow(self, KvVerb::kStopWatchKey,
                                [&] { return StopWatchKey(self, request, watcher); });
            },
            [=](drop_owner_atom, const std::string& task, uint64_t incarnation) {
              DropOwner(self, task, incarnation);
            },
            [=](cancel_atom, const std::string& key) { CancelGets(self, key); },
            [=](deadline_atom, uint64_t waiter_id) { ExpireGet(self, waiter_id); },
            [=](resume_watch_atom, uint64_t id) { ResumeWatch(self, id); },
            [=](kv_stats_atom) { return Stats(self); },
            [=](const proto::GetKvStatsRequest&) { return DirectoryStats(self); },
        };
      },
      KvCalls(self));
}

}  // namespace kv_directory_internal

KvDirectoryActor SpawnKvDirectory(caf::actor_system& system, std::string directory, KvLimits limits,
                                  const KvDurability& durability,
                                  std::shared_ptr<LeaderMetrics> metrics) {
  return system.spawn(kv_directory_internal::KvDirectoryBehavior, std::move(directory), limits,
                      durability, std::move(metrics));
}

caf::error ToKvError(const absl::Status& status) {
  if (status.code() == absl::StatusCode::kAlreadyExists) return ToError(status);
  return ToError(MakeCoordinationError(status));
}

}  // namespace muster
