// The watches of a key-value directory actor (kv_directory_state.h): a watch starts with what
// it missed since its revision (a resumed watch, from the change history of a durable leader),
// then gets every change of its key or directory; a resumed watch waits for the changes still
// on their way to disk.
#include <string>
#include <utility>
#include <vector>

#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>

#include "muster/actors/durability/durable_gate.h"
#include "muster/actors/kv/directory/kv_directory_state.h"
#include "muster/actors/kv/store/kv_key.h"
#include "muster/messages/status/status_codec.h"

namespace muster::kv_directory_internal {
namespace {

// Checks the key of a watch request: a key or a directory of this actor, never the root.
absl::Status CheckWatch(KvDirectoryPointer self, const std::string& key,
                        const KvWatcherActor& watcher) {
  if (!watcher) {
    return absl::InvalidArgumentError(
        absl::StrCat("watch of key ", KeyForMessage(key), " names no watcher actor"));
  }
  if (key.empty()) {
    return absl::InvalidArgumentError("watch a key or a directory, not the root");
  }
  return self->state.store.CheckKey(key);
}

caf::result<proto::WatchKeyResponse> WatchKeyNow(KvDirectoryPointer self,
                                                 const proto::WatchKeyRequest& request,
                                                 const KvWatcherActor& watcher) {
  if (absl::Status status = CheckWatch(self, request.key(), watcher); !status.ok()) {
    return ToKvError(status);
  }
  const KvStore& store = self->state.store;
  std::vector<proto::KeyValueChangeEvent> missed;
  if (request.from_revision() > 0) {  // a resumed watch first gets what it missed
    if (!self->state.durable.enabled()) {
      return ToKvError(absl::OutOfRangeError(absl::StrCat(
          "watch of ", KeyForMessage(request.key()), " cannot resume from revision ",
          request.from_revision(), ": this leader keeps no change history (no --state-dir)")));
    }
    auto changes = self->state.durable.ChangesAfter(request.from_revision(), store.revision());
    if (!changes.ok()) return ToKvError(changes.status());
    missed = *std::move(changes);
  }
  if (!self->state.subscribers.Knows(watcher.address())) self->monitor(watcher);
  self->state.subscribers.Watch(request.key(), watcher);
  if (self->state.durable.enabled() && !self->state.durable.keeps_history()) {
    StateBatch marker;
    self->state.durable.StartHistory(store, marker);
    self->state.durable.gate().Persist(self, std::move(marker));
  }
  for (proto::KeyValueChangeEvent& event : missed) {
    const std::string& key = event.key();
    if (key != request.key() && !absl::StartsWith(key, absl::StrCat(request.key(), "/"))) continue;
    event.set_watched_key(request.key());
    self->send(watcher, std::move(event));
  }
  proto::WatchKeyResponse response;
  response.set_revision(store.revision());
  return response;
}

// Starts resumed watch `id` (a message to this actor) once every change so far is on disk.
void QueueResume(KvDirectoryPointer self, uint64_t id) {
  self->state.durable.gate().After([self, id](const absl::Status& written) {
    if (written.ok()) return self->send(self, resume_watch_atom::value, id);
    auto it = self->state.resuming.find(id);
    if (it == self->state.resuming.end()) return;
    if (!LeavesCallsUnanswered(written)) it->second.promise.deliver(ToKvError(written));
    self->state.resuming.erase(it);
  });
}

}  // namespace

// A watch that resumes while changes are on their way to disk starts once they are there:
// the replay then holds them (once), and nothing not yet recorded is revealed.
caf::result<proto::WatchKeyResponse> WatchKey(KvDirectoryPointer self,
                                              const proto::WatchKeyRequest& request,
                                              const KvWatcherActor& watcher) {
  DurableGate& gate = self->state.durable.gate();
  if (request.from_revision() <= 0 || gate.idle()) {
    return AfterDurable(self, gate, WatchKeyNow(self, request, watcher));
  }
  // It starts in a message of its own, once the changes before it are on disk.
  uint64_t id = ++self->state.next_resume;
  self->state.resuming.emplace(
      id, ResumingWatch{self->make_response_promise<proto::WatchKeyResponse>(), request, watcher});
  auto promise = self->state.resuming.at(id).promise;
  QueueResume(self, id);
  return promise;
}

void ResumeWatch(KvDirectoryPointer self, uint64_t id) {
  if (self->current_sender() != self->ctrl()) return;
  auto it = self->state.resuming.find(id);
  if (it == self->state.resuming.end()) return;
  if (!self->state.durable.gate().idle()) return QueueResume(self, id);  // more changes came
  ResumingWatch watch = std::move(it->second);
  self->state.resuming.erase(it);
  DeliverResult(watch.promise, WatchKeyNow(self, watch.request, watch.watcher));
}

caf::result<proto::StopWatchKeyResponse> StopWatchKey(KvDirectoryPointer self,
                                                      const proto::StopWatchKeyRequest& request,
                                                      const KvWatcherActor& watcher) {
  if (absl::Status status = CheckWatch(self, request.key(), watcher); !status.ok()) {
    return ToKvError(status);
  }
  if (self->state.subscribers.Unwatch(request.key(), watcher.address())) {
    ReleasePeer(self, watcher.address());
  }
  return proto::StopWatchKeyResponse();
}

}  // namespace muster::kv_directory_internal
