// Helpers shared by the key-value tests: request builders, a watcher that records its events,
// requesters that keep their replies (and can withdraw a blocked get), and directory counters.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

#include "muster/actors/kv/directory/kv_directory_actor.h"
#include "muster/messages/status/status_codec.h"
#include "tests/testing/deterministic_fixture.h"

namespace muster::testing {

inline proto::InsertKeyValueRequest InsertRequest(const std::string& key, const std::string& value,
                                                  bool allow_overwrite = false) {
  proto::InsertKeyValueRequest request;
  request.mutable_kv()->set_key(key);
  request.mutable_kv()->set_value(value);
  request.set_allow_overwrite(allow_overwrite);
  return request;
}

inline proto::UpdateKeyValueRequest UpdateRequest(const std::string& key,
                                                  const std::string& value) {
  proto::UpdateKeyValueRequest request;
  request.mutable_kv()->set_key(key);
  request.mutable_kv()->set_value(value);
  return request;
}

inline proto::GetKeyValueRequest GetRequest(const std::string& key, int64_t timeout_ms = 0) {
  proto::GetKeyValueRequest request;
  request.set_key(key);
  request.set_timeout_in_ms(timeout_ms);
  return request;
}

inline proto::TryGetKeyValueRequest TryGetRequest(const std::string& key) {
  proto::TryGetKeyValueRequest request;
  request.set_key(key);
  return request;
}

inline proto::IncrementKeyValueRequest IncrementRequest(const std::string& key, int64_t delta) {
  proto::IncrementKeyValueRequest request;
  request.set_key(key);
  request.set_increment(delta);
  return request;
}

inline proto::GetKeyValueDirRequest DirRequest(const std::string& directory) {
  proto::GetKeyValueDirRequest request;
  request.set_directory_key(directory);
  return request;
}

inline proto::DeleteKeyValueRequest DeleteRequest(const std::string& key, bool is_directory) {
  proto::DeleteKeyValueRequest request;
  request.set_key(key);
  request.set_is_directory(is_directory);
  return request;
}

inline proto::CompareAndSwapRequest CasRequest(const std::string& key, const std::string& expected,
                                               const std::string& desired,
                                               bool expect_absent = false) {
  proto::CompareAndSwapRequest request;
  request.set_key(key);
  request.set_expected(expected);
  request.set_desired(desired);
  request.set_expect_absent(expect_absent);
  return request;
}

inline proto::WatchKeyRequest WatchRequest(const std::string& key) {
  proto::WatchKeyRequest request;
  request.set_key(key);
  return request;
}

inline proto::StopWatchKeyRequest StopWatchRequest(const std::string& key) {
  proto::StopWatchKeyRequest request;
  request.set_key(key);
  return request;
}

inline proto::WaitForKeysRequest WaitForKeysRequest(const std::string& directory, int64_t count,
                                                    int64_t timeout_ms = 0) {
  proto::WaitForKeysRequest request;
  request.set_directory_key(directory);
  request.set_count(count);
  request.set_timeout_in_ms(timeout_ms);
  return request;
}

inline proto::ReduceKeyValueDirRequest ReduceRequest(const std::string& directory,
                                                     proto::ReduceOp op) {
  proto::ReduceKeyValueDirRequest request;
  request.set_directory_key(directory);
  request.set_op(op);
  return request;
}

// The keys of a WaitForKeys answer, in order.
inline std::vector<std::string> Keys(const proto::WaitForKeysResponse& response) {
  std::vector<std::string> keys;
  for (const auto& entry : response.kv()) keys.push_back(entry.key());
  return keys;
}

// The keys of a directory listing, in order.
inline std::vector<std::string> Keys(const proto::GetKeyValueDirResponse& response) {
  std::vector<std::string> keys;
  for (const auto& entry : response.kv()) keys.push_back(entry.key());
  return keys;
}

using EventLog = std::shared_ptr<std::vector<proto::KeyValueChangeEvent>>;

// Spawns a watcher that appends every event it receives to `log`.
inline KvWatcherActor SpawnWatcher(caf::actor_system& system, EventLog log) {
  return system.spawn([log]() -> KvWatcherActor::behavior_type {
    return {[log](const proto::KeyValueChangeEvent& event) { log->push_back(event); }};
  });
}

using GetReply = Reply<proto::GetKeyValueResponse>;

// Spawns an actor that sends every request in `requests` to `dest` and keeps each reply in the
// matching slot; on (cancel_atom, key) from anyone it sends (cancel_atom, key) to `dest` itself.
template <class Handle>
caf::actor SpawnGetter(caf::actor_system& system, Handle dest,
                       std::vector<proto::GetKeyValueRequest> requests,
                       std::vector<GetReply>& replies) {
  replies.clear();
  for (size_t i = 0; i < requests.size(); ++i) {
    replies.push_back(
        std::make_shared<std::optional<absl::StatusOr<proto::GetKeyValueResponse>>>());
  }
  return system.spawn([=](caf::event_based_actor* self) -> caf::behavior {
    for (size_t i = 0; i < requests.size(); ++i) {
      GetReply reply = replies[i];
      self->request(dest, caf::infinite, requests[i])
          .then([reply](proto::GetKeyValueResponse& response) { *reply = std::move(response); },
                [reply](caf::error& error) { *reply = ToStatus(error); });
    }
    return {
        [=](cancel_atom, const std::string& key) { self->send(dest, cancel_atom::value, key); }};
  });
}

// Counters of a directory actor.
struct KvStats {
  int64_t keys = -1;
  int64_t waiters = -1;
  int64_t watches = -1;
  int64_t peers = -1;
};

// Asks `directory` for its counters; the test must Drain() before reading the result.
inline std::shared_ptr<KvStats> AskStats(caf::actor_system& system,
                                         const KvDirectoryActor& directory) {
  auto stats = std::make_shared<KvStats>();
  system.spawn([=](caf::event_based_actor* self) {
    self->request(directory, caf::infinite, kv_stats_atom::value)
        .then([=](int64_t keys, int64_t waiters, int64_t watches, int64_t peers) {
          *stats = KvStats{keys, waiters, watches, peers};
        });
  });
  return stats;
}

}  // namespace muster::testing
