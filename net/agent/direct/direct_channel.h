// The agent's direct calls: key-value calls made on the calling thread, over plain TCP
// connections of the agent's own to the leader's direct port (net/leader/direct/
// direct_endpoint.h, proto/direct_call.proto). The caller writes its request and reads the
// answer itself: no hand-off to the network thread and back, which is what a call through the
// agent actor costs on top of its round trip.
//
// The agent actor publishes a route (the leader's host, its direct port, the job token) while
// it is RUNNING and retires it when it leaves (the leader lost, an error, Shutdown): a blocking
// get waiting on a retired route gives up at once, another call a second later, and the agent
// makes it through the actor, whose semantics (waiting for a lost leader, re-sent writes) then
// apply. A route keeps its idle connections for the next calls, at most kMaxConnections at a
// time (a call beyond them goes through the actor too); one found closed is not used, nor one
// that carried a frame over 64 KiB. A dial that fails keeps the route from dialling for 30 s.
//
//   connection: dialled (token presented) --> IN CALL --answered--> IDLE --taken--> IN CALL
//                                               \--lost, cancelled, deadline, retired--> closed
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/base/thread_annotations.h>
#include <absl/container/flat_hash_map.h>
#include <absl/status/status.h>
#include <absl/synchronization/mutex.h>
#include <absl/time/time.h>

#include "muster/proto/direct_call.pb.h"

namespace muster {

class DirectRoute {
 public:
  static constexpr size_t kMaxConnections = 64;

  DirectRoute(std::string host, uint16_t port, std::string token);
  ~DirectRoute();  // closes the idle connections
  DirectRoute(const DirectRoute&) = delete;
  DirectRoute& operator=(const DirectRoute&) = delete;

  // Every call on this route gives up (kNotSent or kLost); no new one starts. Thread-safe,
  // without a lock: what the agent actor calls when it leaves RUNNING.
  void Retire();
  bool retired() const { return retired_.load(std::memory_order_acquire); }

  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }

 private:
  friend class DirectChannel;
  struct InCall {
    int fd = -1;
    std::string key;  // a blocking get's key (empty for other calls)
    bool cancelled = false;
    std::string why;  // the cancel's reason
  };

  const std::string host_;
  const uint16_t port_;
  const std::string token_;
  const int retired_fd_;  // an eventfd, readable once retired
  std::atomic<bool> retired_{false};
  std::atomic<int64_t> dial_refused_until_{0};  // Unix ns: no dial before then
  absl::Mutex mutex_;
  std::vector<int> idle_ ABSL_GUARDED_BY(mutex_);
  absl::flat_hash_map<uint64_t, InCall> in_call_ ABSL_GUARDED_BY(mutex_);
  uint64_t next_call_ ABSL_GUARDED_BY(mutex_) = 0;
};

class DirectChannel {
 public:
  enum class Outcome {
    kAnswered,   // `response` holds the leader's answer
    kNotSent,    // no route, no connection to be had, or retired before the request left
    kLost,       // the request left and the connection ended (or the route retired) before the
                 // answer: it may or may not have been applied
    kCancelled,  // Cancel or CancelAll
    kTimedOut,   // the deadline passed (the connection is closed)
  };
  struct Result {
    Outcome outcome = Outcome::kNotSent;
    proto::DirectResponse response;
    std::string detail;        // why, for kNotSent, kLost and kCancelled
    bool interrupted = false;  // kCancelled because `interrupted` said so
  };

  // The agent actor's side: the route to use from now on (null: none); the one before is
  // retired. Takes no lock of the channel's (std::atomic<std::shared_ptr>, whose own brief
  // lock libstdc++ keeps inside the atomic).
  void SetRoute(std::shared_ptr<DirectRoute> route);

  // Makes `request` on the calling thread and waits for its answer until `deadline`. `key`:
  // a blocking get's key, which Cancel(key) withdraws. `interrupted` (may be empty) is asked
  // every 50 ms of waiting: true ends the call with kCancelled. `hold` (0: none): the get's
  // hold, a cancel that marked it ends the call with kCancelled before it is sent.
  Result Call(const proto::DirectRequest& request, const std::string& key, absl::Time deadline,
              const std::function<bool()>& interrupted = nullptr, uint64_t hold = 0);

  // A blocking get's hold, from before its direct attempt until it is answered or the agent
  // actor has it: Cancel(key) marks it, so that a cancel landing after a direct
  // attempt gave up and before the actor took the get is not lost (the caller tells the actor
  // again: Agent::ReleaseGet). Never 0.
  uint64_t HoldGet(const std::string& key);
  // Gives the hold back: true when a cancel marked it.
  bool ReleaseGet(uint64_t hold);

  // The blocking gets of `key` in progress end with kCancelled (their connections close, which
  // withdraws them at the leader).
  void Cancel(const std::string& key, const std::string& why);
  // Every blocking get in progress ends with kCancelled, and the route is dropped (Shutdown):
  // other calls in progress wait a second more for their answers, then end kLost.
  void CancelAll(const std::string& why);

  // Calls answered directly so far (tests, the bench).
  uint64_t answered() const { return answered_.load(std::memory_order_relaxed); }

 private:
  struct Hold {
    std::string key;
    bool cancelled = false;
    std::string why;  // the cancel's reason
  };

  std::shared_ptr<DirectRoute> Route() const;
  void CancelIf(const std::string* key, const std::string& why);
  // The reason of the cancel that marked `hold`, if one did.
  std::optional<std::string> HoldCancelled(uint64_t hold);

  std::atomic<std::shared_ptr<DirectRoute>> route_;
  std::atomic<uint64_t> answered_{0};
  absl::Mutex holds_mutex_;
  absl::flat_hash_map<uint64_t, Hold> holds_ ABSL_GUARDED_BY(holds_mutex_);
  uint64_t next_hold_ ABSL_GUARDED_BY(holds_mutex_) = 0;
};

}  // namespace muster
