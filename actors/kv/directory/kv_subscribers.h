// Who waits on a key-value directory: parked GetKeyValue and WaitForKeys calls (response
// promises, by key or directory and by requester) and watches (by watched key). The owning
// directory actor monitors every peer this class knows and tells it when a peer goes down; the
// class itself sends nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/btree_set.h>
#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/strings/string_view.h>
#include <caf/actor_addr.hpp>
#include <caf/actor_clock.hpp>
#include <caf/typed_response_promise.hpp>

#include "muster/messages/vocabulary/interfaces.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

// A parked GetKeyValue call (count 0) or WaitForKeys call (count > 0: `key` is the directory).
struct KvWaiter {
  std::string key;
  caf::actor_addr requester;
  int64_t timeout_ms = 0;  // 0: no deadline
  caf::typed_response_promise<proto::GetKeyValueResponse> promise;
  int64_t count = 0;
  caf::typed_response_promise<proto::WaitForKeysResponse> dir_promise;
  caf::actor_clock::time_point parked_at{};  // when the call was parked (its wait, counted)
  bool waits_for_keys() const { return count > 0; }
};

class KvSubscribers {
 public:
  // Parks `waiter`; returns its id (ids grow, so they also order waiters by arrival).
  uint64_t Park(KvWaiter waiter);
  // Removes and returns every GetKeyValue waiter on `key`, oldest first.
  std::vector<KvWaiter> TakeKey(absl::string_view key);
  // Removes and returns the WaitForKeys waiters of the directories above `key` ("a/b/c": "a",
  // "a/b") whose count count_under(directory) reaches, oldest first per directory.
  template <class CountFn>
  std::vector<KvWaiter> TakeReadyDirs(absl::string_view key, CountFn count_under);
  // Removes and returns the waiter `id`, if it is still parked.
  std::optional<KvWaiter> TakeId(uint64_t id);
  // Removes and returns the waiters of `requester` on `key`, oldest first.
  std::vector<KvWaiter> TakeRequesterKey(const caf::actor_addr& requester, absl::string_view key);
  // Removes and returns every waiter.
  std::vector<KvWaiter> TakeAll();

  // Adds a watch of `key` (a key, or a directory and everything under it) by `watcher`;
  // returns false when it already existed.
  bool Watch(const std::string& key, const KvWatcherActor& watcher);
  // Removes a watch; returns false when there was none.
  bool Unwatch(absl::string_view key, const caf::actor_addr& watcher);
  // Calls fn(watched_key, watcher) for every watch that sees a change of `key`: watches of
  // `key` itself and of each directory above it ("a/b/c": "a", "a/b", "a/b/c").
  template <class Fn>
  void ForEachWatcher(absl::string_view key, Fn fn) const;

  // Forgets every waiter and watch of `peer` (it went down).
  void DropPeer(const caf::actor_addr& peer);
  // True while `peer` has a waiter or a watch here (and so needs a monitor).
  bool Knows(const caf::actor_addr& peer) const { return peers_.contains(peer); }

  int64_t num_waiters() const { return static_cast<int64_t>(waiters_.size()); }
  int64_t num_watches() const { return num_watches_; }
  int64_t num_peers() const { return static_cast<int64_t>(peers_.size()); }

 private:
  struct Peer {
    absl::flat_hash_set<uint64_t> waiters;
    absl::flat_hash_set<std::string> watches;
  };
  using Watchers = absl::flat_hash_map<caf::actor_addr, KvWatcherActor>;

  // Removes the parked waiter `id` from every index and returns it.
  KvWaiter Remove(uint64_t id);
  // The index of a waiter's kind.
  absl::flat_hash_map<std::string, absl::btree_set<uint64_t>>& IndexOf(const KvWaiter& waiter) {
    return waiter.waits_for_keys() ? waiters_by_dir_ : waiters_by_key_;
  }
  // Erases the peer's entry once it has neither waiters nor watches.
  void ReleaseIfIdle(const caf::actor_addr& peer);

  uint64_t next_id_ = 1;
  int64_t num_watches_ = 0;
  absl::flat_hash_map<uint64_t, KvWaiter> waiters_;
  absl::flat_hash_map<std::string, absl::btree_set<uint64_t>> waiters_by_key_;
  absl::flat_hash_map<std::string, absl::btree_set<uint64_t>> waiters_by_dir_;  // WaitForKeys
  absl::flat_hash_map<caf::actor_addr, Peer> peers_;
  absl::flat_hash_map<std::string, Watchers> watches_;
};

template <class Fn>
void KvSubscribers::ForEachWatcher(absl::string_view key, Fn fn) const {
  if (watches_.empty()) return;
  for (size_t end = key.find('/');; end = key.find('/', end + 1)) {
    absl::string_view watched = key.substr(0, end);
    if (auto it = watches_.find(watched); it != watches_.end()) {
      for (const auto& [address, watcher] : it->second) fn(watched, watcher);
    }
    if (end == absl::string_view::npos) return;
  }
}

template <class CountFn>
std::vector<KvWaiter> KvSubscribers::TakeReadyDirs(absl::string_view key, CountFn count_under) {
  std::vector<KvWaiter> taken;
  if (waiters_by_dir_.empty()) return taken;
  for (size_t end = key.find('/'); end != absl::string_view::npos; end = key.find('/', end + 1)) {
    absl::string_view directory = key.substr(0, end);
    auto it = waiters_by_dir_.find(directory);
    if (it == waiters_by_dir_.end()) continue;
    int64_t have = count_under(directory);
    std::vector<uint64_t> ready;
    for (uint64_t id : it->second) {
      if (waiters_.at(id).count <= have) ready.push_back(id);
    }
    for (uint64_t id : ready) taken.push_back(Remove(id));
  }
  return taken;
}

}  // namespace muster
