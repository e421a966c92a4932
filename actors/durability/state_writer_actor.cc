#include "muster/actors/durability/state_writer_actor.h"

#include <chrono>
#include <vector>

#include <caf/blocking_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/response_promise.hpp>

#include "muster/actors/durability/state_store.h"
#include "muster/actors/observe/leader_metrics.h"
#include "muster/messages/status/status_codec.h"

namespace muster {
namespace {

// A group commit takes at most this many batches (the rest wait for the next write).
constexpr size_t kMaxGroup = 4096;

void WriterLoop(caf::blocking_actor* self, std::shared_ptr<StateStore> store,
                std::shared_ptr<LeaderMetrics> metrics) {
  bool running = true;
  absl::Status failed;
  StateBatch group;
  std::vector<caf::response_promise> waiting;
  auto take = [&](StateBatch& batch) {
    auto promise = self->make_response_promise();
    if (!failed.ok()) {
      promise.deliver(ToError(failed));
      return;
    }
    group.Append(std::move(batch));
    waiting.push_back(std::move(promise));
  };
  auto on_exit = [&](caf::exit_msg& msg) {
    running = false;
    self->fail_state(msg.reason);
  };
  while (running) {
    self->receive([&](persist_atom, StateBatch& batch) { take(batch); }, on_exit);
    // Everything already waiting joins this write: one sync for the whole group.
    bool more = true;
    while (more && running && waiting.size() < kMaxGroup) {
      self->receive([&](persist_atom, StateBatch& batch) { take(batch); }, on_exit,
                    caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
    }
    if (waiting.empty()) continue;
    if (failed.ok() && !group.empty()) {
      auto start = self->clock().now();
      failed = store->Write(group);
      if (metrics && failed.ok()) {
        metrics->DurableWrite(self->clock().now() - start, waiting.size(), group.ops.size());
      }
    }
    for (auto& promise : waiting) {
      if (failed.ok()) {
        promise.deliver(true);
      } else {
        promise.deliver(ToError(failed));
      }
    }
    waiting.clear();
    group.Clear();
  }
  store->Close();  // the lock goes with the writer, not with the last handle to it
}

}  // namespace

StateWriterActor SpawnStateWriter(caf::actor_system& system, std::shared_ptr<StateStore> store,
                                  std::shared_ptr<LeaderMetrics> metrics) {
  return caf::actor_cast<StateWriterActor>(
      system.spawn<caf::detached>(WriterLoop, std::move(store), std::move(metrics)));
}

}  // namespace muster
