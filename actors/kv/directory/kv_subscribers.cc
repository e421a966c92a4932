#include "muster/actors/kv/directory/kv_subscribers.h"

#include <utility>

namespace muster {

uint64_t KvSubscribers::Park(KvWaiter waiter) {
  uint64_t id = next_id_++;
  IndexOf(waiter)[waiter.key].insert(id);
  peers_[waiter.requester].waiters.insert(id);
  waiters_.emplace(id, std::move(waiter));
  return id;
}

std::vector<KvWaiter> KvSubscribers::TakeKey(absl::string_view key) {
  std::vector<KvWaiter> taken;
  auto it = waiters_by_key_.find(key);
  if (it == waiters_by_key_.end()) return taken;
  std::vector<uint64_t> ids(it->second.begin(), it->second.end());
  for (uint64_t id : ids) taken.push_back(Remove(id));
  return taken;
}

std::optional<KvWaiter> KvSubscribers::TakeId(uint64_t id) {
  if (!waiters_.contains(id)) return std::nullopt;
  return Remove(id);
}

std::vector<KvWaiter> KvSubscribers::TakeRequesterKey(const caf::actor_addr& requester,
                                                      absl::string_view key) {
  std::vector<KvWaiter> taken;
  auto it = waiters_by_key_.find(key);
  if (it == waiters_by_key_.end()) return taken;
  std::vector<uint64_t> ids;
  for (uint64_t id : it->second) {
    if (waiters_.at(id).requester == requester) ids.push_back(id);
  }
  for (uint64_t id : ids) taken.push_back(Remove(id));
  return taken;
}

std::vector<KvWaiter> KvSubscribers::TakeAll() {
  std::vector<KvWaiter> taken;
  while (!waiters_.empty()) taken.push_back(Remove(waiters_.begin()->first));
  return taken;
}

bool KvSubscribers::Watch(const std::string& key, const KvWatcherActor& watcher) {
  caf::actor_addr address = watcher.address();
  if (!watches_[key].emplace(address, watcher).second) return false;
  peers_[address].watches.insert(key);
  ++num_watches_;
  return true;
}

bool KvSubscribers::Unwatch(absl::string_view key, const caf::actor_addr& watcher) {
  auto it = watches_.find(key);
  if (it == watches_.end() || it->second.erase(watcher) == 0) return false;
  if (it->second.empty()) watches_.erase(it);
  if (auto peer = peers_.find(watcher); peer != peers_.end()) peer->second.watches.erase(key);
  --num_watches_;
  ReleaseIfIdle(watcher);
  return true;
}

void KvSubscribers::DropPeer(const caf::actor_addr& peer) {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return;
  Peer dropped = std::move(it->second);
  peers_.erase(it);
  for (uint64_t id : dropped.waiters) {
    auto waiter = waiters_.find(id);
    auto& index = IndexOf(waiter->second);
    auto by_key = index.find(waiter->second.key);
    by_key->second.erase(id);
    if (by_key->second.empty()) index.erase(by_key);
    waiters_.erase(waiter);
  }
  for (const std::string& key : dropped.watches) {
    auto watchers = watches_.find(key);
    watchers->second.erase(peer);
    if (watchers->second.empty()) watches_.erase(watchers);
    --num_watches_;
  }
}

KvWaiter KvSubscribers::Remove(uint64_t id) {
  auto it = waiters_.find(id);
  KvWaiter waiter = std::move(it->second);
  waiters_.erase(it);
  auto& index = IndexOf(waiter);
  auto by_key = index.find(waiter.key);
  by_key->second.erase(id);
  if (by_key->second.empty()) index.erase(by_key);
  if (auto peer = peers_.find(waiter.requester); peer != peers_.end()) {
    peer->second.waiters.erase(id);
    ReleaseIfIdle(waiter.requester);
  }
  return waiter;
}

void KvSubscribers::ReleaseIfIdle(const caf::actor_addr& peer) {
  auto it = peers_.find(peer);
  if (it != peers_.end() && it->second.waiters.empty() && it->second.watches.empty()) {
    peers_.erase(it);
  }
}

}  // namespace muster
