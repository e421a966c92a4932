// The state writer: the one actor of a leader with a state dir that touches the disk. Actors
// that own durable state (the coordinator, KV directories, barriers) send it their changes as a
// StateBatch and acknowledge a write to their client only when the writer's answer says that
// the batch is on disk. It runs detached (its own thread, since a synchronous write blocks) and
// commits in groups: every batch waiting in its mailbox goes into one synced write.
//
//   WRITING --write failed--> FAILED (that batch and every later one fail with Internal: the
//                                      changes are answered with it; restart the leader)
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/typed_actor.hpp>

#include "muster/messages/vocabulary/atoms.h"

namespace muster {

class LeaderMetrics;
class StateStore;

// Changes to the state, applied in order: a put (value) or a delete. A batch made by Put and
// Delete is one unit, applied atomically; Append() joins batches and keeps each a unit of its
// own (a store that cannot apply a whole group atomically splits it between units only).
struct StateBatch {
  std::vector<std::pair<std::string, std::optional<std::string>>> ops;
  // Where each unit but the last ends (an index into ops); the last ends with ops.
  std::vector<size_t> unit_ends;

  void Put(std::string key, std::string value) {
    ops.emplace_back(std::move(key), std::move(value));
  }
  void Delete(std::string key) { ops.emplace_back(std::move(key), std::nullopt); }
  bool empty() const { return ops.empty(); }
  void Append(StateBatch&& other) {
    if (other.empty()) return;
    if (!ops.empty()) unit_ends.push_back(ops.size());
    for (size_t end : other.unit_ends) unit_ends.push_back(ops.size() + end);
    for (auto& op : other.ops) ops.push_back(std::move(op));
  }
  void Clear() {
    ops.clear();
    unit_ends.clear();
  }
};

}  // namespace muster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(muster::StateBatch)

namespace muster {

// Replies true once the batch is durable. Possible errors: Internal (the disk write failed,
// naming the state dir and the cause).
using StateWriterActor = caf::typed_actor<caf::replies_to<persist_atom, StateBatch>::with<bool>>;

// Spawns the writer of `store` (detached). The store stays alive as long as the writer.
// `metrics` (when set) times every synced write and counts the batches it took.
StateWriterActor SpawnStateWriter(caf::actor_system& system, std::shared_ptr<StateStore> store,
                                  std::shared_ptr<LeaderMetrics> metrics = nullptr);

}  // namespace muster
