#include "runtime.h"

#include <algorithm>
#include <vector>

#include "muster/net/agent/agent.h"

namespace muster::python {
namespace {

absl::Status AfterShutdown() {
  return absl::FailedPreconditionError(
      "muster is shut down: the interpreter is exiting (no new agents or leaders)");
}

}  // namespace

Runtime& Runtime::Get() {
  static auto* runtime = new Runtime();  // outlives every Python object that may use it
  return *runtime;
}

absl::StatusOr<caf::actor_system*> Runtime::WorkerSystem(absl::Duration heartbeat_timeout) {
  absl::MutexLock lock(&mutex_);
  if (shut_down_) return AfterShutdown();
  if (!workers_) {
    NodeOptions options = WorkerNodeOptions(heartbeat_timeout);
    // Nothing of the binding blocks a scheduler thread: callbacks only queue work for the
    // dispatcher, and calls wait on the caller's thread.
    options.scheduler_threads = 1;
    workers_ = std::make_unique<Node>(options);
  }
  return &workers_->system;
}

absl::StatusOr<caf::actor_system*> Runtime::LeaderSystem() {
  absl::MutexLock lock(&mutex_);
  if (shut_down_) return AfterShutdown();
  if (!leaders_) leaders_ = std::make_unique<Node>(NodeOptions{});
  return &leaders_->system;
}

bool Runtime::HostsLeader() {
  absl::MutexLock lock(&mutex_);
  return leaders_ != nullptr;
}

void Runtime::Register(Closable* object) {
  absl::MutexLock lock(&mutex_);
  objects_.insert(object);
}

void Runtime::Unregister(Closable* object) {
  // Waits while Shutdown closes the registered objects: it may be closing this one, which its
  // owner is about to destroy.
  absl::MutexLock closing(&closing_);
  absl::MutexLock lock(&mutex_);
  objects_.erase(object);
}

void Runtime::Shutdown() {
  absl::MutexLock closing(&closing_);
  std::vector<Closable*> objects;
  {
    absl::MutexLock lock(&mutex_);
    if (shut_down_) return;
    shut_down_ = true;
    objects.assign(objects_.begin(), objects_.end());
  }
  // Agents first (they may still talk to a leader of this process), then leaders.
  std::stable_sort(objects.begin(), objects.end(),
                   [](Closable* a, Closable* b) { return a->close_rank() < b->close_rank(); });
  for (Closable* object : objects) object->Close();
  std::unique_ptr<Node> workers, leaders;
  {
    absl::MutexLock lock(&mutex_);
    objects_.clear();
    workers = std::move(workers_);
    leaders = std::move(leaders_);
  }
  workers.reset();
  leaders.reset();
}

}  // namespace muster::python
