// The agent's watches: a callback per watched key, fed with the leader's change events in
// order. Each watch keeps the highest revision it delivered (first its WatchKeyResponse's), so
// that after a reconnect the leader can resume it from there (WatchKeyRequest.from_revision)
// and an event that was delivered already is dropped instead of repeated.
#include <algorithm>

#include <absl/strings/str_cat.h>

#include "muster/actors/kv/store/kv_key.h"
#include "muster/messages/requests/kv_requests.h"
#include "muster/messages/status/status_codec.h"
#include "muster/net/agent/actor/calls/agent_forward.h"

namespace muster {
namespace {

// The watch of `key` if it is still the one with `id`.
AgentActorState::Watch* Find(AgentPointer self, const std::string& key, uint64_t id) {
  auto it = self->state.watches.find(key);
  if (it == self->state.watches.end() || it->second.id != id) return nullptr;
  return &it->second;
}

void Resume(AgentPointer self, const std::string& key, uint64_t id, int64_t revision) {
  auto& st = self->state;
  proto::WatchKeyRequest request = requests::WatchKey(key, revision);
  CoordinatorActor leader = st.leader;
  self->request(leader, st.config.rpc_timeout, request, caf::actor_cast<KvWatcherActor>(self))
      .then([](proto::WatchKeyResponse&) {},  // the revision stays the last one delivered
            [self, key, id, leader](caf::error&) {
              auto& st = self->state;
              // Lost again: the next reconnect resumes it.
              if (Reconnecting(self) || st.leader != leader || !Find(self, key, id)) return;
              // Typically OutOfRange: the leader's change history no longer reaches back to
              // the revision. Not a failure of the job: the watch ends (AgentStatus).
              st.watches.erase(key);
              st.dropped_watches.push_back(key);
            });
}

}  // namespace

caf::result<proto::WatchKeyResponse> WatchKey(AgentPointer self,
                                              const proto::WatchKeyRequest& request,
                                              const WatchCallback& callback) {
  auto& st = self->state;
  if (!HasLeader(self)) return ToError(NoLeader(self));
  std::string key = NormalizeKey(request.key());
  uint64_t id = ++st.next_watch;
  st.watches[key] = AgentActorState::Watch{.callback = callback, .id = id};
  st.dropped_watches.erase(std::remove(st.dropped_watches.begin(), st.dropped_watches.end(), key),
                           st.dropped_watches.end());
  auto promise = self->make_response_promise<proto::WatchKeyResponse>();
  CallLeader<proto::WatchKeyResponse>(
      self, caf::duration{st.config.rpc_timeout}, {},
      [self, key, id, promise](absl::StatusOr<proto::WatchKeyResponse> result) mutable {
        AgentActorState::Watch* watch = Find(self, key, id);
        if (result.ok()) {
          if (watch != nullptr) {
            watch->started = true;
            watch->revision = std::max(watch->revision, result->revision());
          }
          promise.deliver(*std::move(result));
          return;
        }
        if (watch != nullptr) self->state.watches.erase(key);
        promise.deliver(ToError(result.status()));
      },
      request, caf::actor_cast<KvWatcherActor>(self));
  return promise;
}

caf::result<proto::StopWatchKeyResponse> StopWatchKey(AgentPointer self,
                                                      const proto::StopWatchKeyRequest& request) {
  auto& st = self->state;
  st.watches.erase(NormalizeKey(request.key()));
  // Answered once the callbacks of the watch already queued on the runner have run: none runs
  // after StopWatchKey returns.
  auto promise = self->make_response_promise<proto::StopWatchKeyResponse>();
  auto answer = [self, promise](caf::error error) mutable {
    AfterUserCallbacks(self, [promise, error]() mutable {
      if (error) {
        promise.deliver(std::move(error));
      } else {
        promise.deliver(proto::StopWatchKeyResponse{});
      }
    });
  };
  if (!st.leader) {
    answer(caf::none);
    return promise;
  }
  self->request(st.leader, st.config.rpc_timeout, request, caf::actor_cast<KvWatcherActor>(self))
      .then([answer](proto::StopWatchKeyResponse&) mutable { answer(caf::none); },
            [answer](caf::error& e) mutable { answer(std::move(e)); });
  return promise;
}

void OnChange(AgentPointer self, const proto::KeyValueChangeEvent& event) {
  auto it = self->state.watches.find(event.watched_key());
  if (it == self->state.watches.end()) return;
  AgentActorState::Watch& watch = it->second;
  if (event.revision() > 0) {
    if (event.revision() <= watch.revision) return;  // delivered already (a resumed watch)
    watch.revision = event.revision();
  }
  if (watch.callback.on_change) {
    RunUserCallback(self, [on_change = watch.callback.on_change, event] { on_change(event); });
  }
}

void ResumeWatches(AgentPointer self) {
  for (const auto& [key, watch] : self->state.watches) {
    // A watch the leader never answered is still a pending call: re-sent with the others.
    if (watch.started) Resume(self, key, watch.id, watch.revision);
  }
}

}  // namespace muster
