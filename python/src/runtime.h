// The actor systems of a Python process: one for its agents and one for leaders it hosts (CAF
// would shortcut a node's TCP connection to itself), made on first use and torn down at
// interpreter exit (muster registers Runtime::Shutdown with atexit), after every agent and
// leader still alive has been closed.
#pragma once

#include <memory>

#include <absl/base/thread_annotations.h>
#include <absl/container/flat_hash_set.h>
#include <absl/status/statusor.h>
#include <absl/synchronization/mutex.h>
#include <absl/time/time.h>
#include <caf/actor_system.hpp>

#include "muster/net/transport/node_config.h"

namespace muster::python {

// An agent or leader owned by a Python object: closed by its owner, or by Runtime::Shutdown.
class Closable {
 public:
  virtual ~Closable() = default;
  // Releases the C++ object (blocking); idempotent. Called without the GIL.
  virtual void Close() = 0;
  // Shutdown closes lower ranks first: agents (0) before leaders (1), which they may talk to.
  virtual int close_rank() const { return 0; }
};

class Runtime {
 public:
  static Runtime& Get();

  // The agents' actor system; the first call decides its CAF connection timeout
  // (WorkerNodeOptions(heartbeat_timeout)). TLS comes from $MUSTER_TLS_*.
  // Possible errors: FailedPrecondition (after Shutdown).
  absl::StatusOr<caf::actor_system*> WorkerSystem(absl::Duration heartbeat_timeout);
  absl::StatusOr<caf::actor_system*> LeaderSystem();
  // True once this process has hosted a leader.
  bool HostsLeader();

  void Register(Closable* object);
  void Unregister(Closable* object);

  // Closes every registered object, then stops both actor systems. Without the GIL.
  void Shutdown();

 private:
  struct Node {
    explicit Node(const NodeOptions& options) : config(options), system(config) {}
    NodeConfig config;
    caf::actor_system system;
  };

  // Held by Shutdown while it closes the objects it took from objects_, and by Unregister: an
  // object's owner cannot free it while Shutdown still uses it. Taken before mutex_.
  absl::Mutex closing_ ABSL_ACQUIRED_BEFORE(mutex_);
  absl::Mutex mutex_;
  std::unique_ptr<Node> workers_ ABSL_GUARDED_BY(mutex_);
  std::unique_ptr<Node> leaders_ ABSL_GUARDED_BY(mutex_);
  absl::flat_hash_set<Closable*> objects_ ABSL_GUARDED_BY(mutex_);
  bool shut_down_ ABSL_GUARDED_BY(mutex_) = false;
};

}  // namespace muster::python
