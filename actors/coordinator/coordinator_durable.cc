// The coordinator's part of durable state (a leader with a state dir): what it restores at
// start from CoordinatorOptions::recovered, and the records it keeps up to date (its own, and
// every task's). Key-value directories and barriers record their own state.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <absl/strings/str_cat.h>

#include "muster/actors/coordinator/coordinator_state.h"
#include "muster/actors/durability/state_store.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

// The slot whose live incarnation (recovered CONNECTED) owns the recovered ephemeral `record`;
// null when the owner is no live incarnation of a configured task.
TaskSlot* LiveOwner(CoordinatorState& st, const proto::KvRecord& record) {
  absl::StatusOr<proto::CoordinatedTask> task = ParseTaskName(record.owner_task());
  if (!task.ok()) return nullptr;
  TaskSlot* slot = st.tasks.Find(*task);
  if (slot == nullptr || slot->live_incarnation != record.owner_incarnation()) return nullptr;
  return slot;
}

// The owners of the recovered ephemeral keys. The incarnation a task was recovered CONNECTED
// with owns its keys as if it had written them since the restart: they are deleted when it ends
// (OnHealthState). The keys of any other owner are deleted now: an incarnation that ended before
// the leader stopped (its keys' deletion was not on disk yet), or a task no longer configured.
void RestoreEphemeralOwners(CoordinatorPointer self, const proto::RecoveredState& recovered,
                            const KvRouter& router) {
  for (const proto::RecoveredKvDirectory& dir : recovered.directories()) {
    std::set<std::pair<std::string, uint64_t>> ended;  // ordered: deletions in a fixed order
    for (const proto::KvRecord& record : dir.records()) {
      if (record.owner_task().empty() || record.owner_incarnation() == 0) continue;
      if (TaskSlot* slot = LiveOwner(self->state, record)) {
        self->state.ephemeral.Mark(slot->index);
      } else {
        ended.emplace(record.owner_task(), record.owner_incarnation());
      }
    }
    std::optional<KvDirectoryActor> actor = router.Find(dir.directory());
    if (!actor) continue;  // not restored
    for (const auto& [task, incarnation] : ended) {
      self->send(*actor, drop_owner_atom::value, task, incarnation);
    }
  }
}

}  // namespace

caf::timespan RestoreCoordinator(CoordinatorPointer self) {
  auto& st = self->state;
  const proto::RecoveredState* recovered = st.options.recovered.get();
  st.records =
      CoordinatorRecords(st.options.state_writer, st.options.incarnation,
                         recovered != nullptr ? recovered->leader() : proto::LeaderRecord());
  if (recovered != nullptr) {
    st.tasks.set_version(recovered->leader().version());
    st.launchers.set_round(recovered->leader().round());
    // Tasks that reconnect learn the cluster's failure, as tasks connecting later do
    // (OnTaskState): the leader that recorded it may have stopped before telling them.
    st.cluster_error = RestoredClusterError(recovered->leader());
    for (const proto::TaskRecord& record : recovered->tasks()) {
      const proto::CoordinatedTaskStateInfo* known = st.tasks.view().Find(record.task());
      if (known == nullptr) continue;  // a task of a job no longer configured
      proto::CoordinatedTaskStateInfo info = *known;
      info.set_state(record.state());
      info.set_incarnation(record.incarnation());
      info.set_error_code(record.error_code());
      info.set_error_message(record.error_message());
      st.tasks.view().Update(info);
      // The incarnation recovered CONNECTED is live until it ends, and its ephemeral keys with it.
      if (record.state() == proto::TASKSTATE_CONNECTED) {
        st.tasks.Find(record.task())->live_incarnation = record.incarnation();
      }
    }
    for (const proto::BarrierRecord& record : recovered->barriers()) {
      st.barriers.Restore(record.id(), record.counter(), LoadStatus(record.result()));
    }
  }
  if (st.records.enabled()) {
    st.records.gate().Persist(self, st.records.Started(st.options.started_unix_ms,
                                                       st.tasks.version(), st.launchers.round()));
  }
  return st.options.reconnect_window > caf::timespan{0} ? st.options.reconnect_window
                                                        : st.heartbeat_timeout;
}

void RestoreGenerations(CoordinatorPointer self) {
  auto& st = self->state;
  if (!st.options.recovered) return;
  for (const proto::TaskRecord& record : st.options.recovered->tasks()) {
    if (TaskSlot* slot = st.tasks.Find(record.task())) {
      st.launchers.set_generation(slot->index, record.generation());
    }
  }
}

void StopChildrenOnExit(CoordinatorPointer self) {
  // A leader with a state dir pauses its children (waiting calls stay unanswered, to be re-sent
  // to the restarted leader); one without stops them (waiting calls fail).
  caf::error reason = self->state.records.gate().enabled()
                          ? LeaderPauseReason()
                          : caf::error(caf::exit_reason::user_shutdown);
  self->attach_functor([children = self->state.children, reason](const caf::error&) {
    for (auto& [address, child] : *children) {
      if (child) {
        child->enqueue(nullptr, caf::make_message_id(),
                       caf::make_message(caf::exit_msg{child->address(), reason}), nullptr);
      }
    }
  });
}

KvRouter NewKvRouter(CoordinatorPointer self) {
  auto& st = self->state;
  KvRouter router(KvLimits::FromConfig(st.options.config), [self](const std::string& directory,
                                                                  const KvLimits& limits) {
    const auto& options = self->state.options;
    KvDurability durability{.writer = options.state_writer, .recovered = options.recovered};
    if (options.recovered) {
      const auto& dirs = options.recovered->directories();
      for (int i = 0; i < dirs.size(); ++i) {
        if (dirs[i].directory() == directory) durability.directory_index = i;
      }
    }
    KvDirectoryActor actor =
        SpawnKvDirectory(self->system(), directory, limits, durability, options.metrics);
    self->monitor(actor);
    self->state.children->emplace(actor.address(), caf::actor_cast<caf::actor>(actor));
    return actor;
  });
  if (const auto* recovered = st.options.recovered.get()) {
    for (const auto& dir : recovered->directories()) {
      if (auto opened = router.Open(dir.directory()); !opened.ok()) {
        CAF_LOG_ERROR("cannot restore key-value directory" << dir.directory() << ":"
                                                           << opened.status().ToString());
      }
    }
    RestoreEphemeralOwners(self, *recovered, router);
  }
  st.options.recovered.reset();  // restored: a directory spawned later starts empty
  if (st.options.state_writer) {
    st.children->emplace(st.options.state_writer.address(),
                         caf::actor_cast<caf::actor>(st.options.state_writer));
  }
  return router;
}

void PersistTaskState(CoordinatorPointer self, const proto::CoordinatedTaskStateInfo& info) {
  auto& st = self->state;
  if (!st.records.enabled()) return;
  const TaskSlot* slot = st.tasks.Find(info.task());
  int64_t generation = slot == nullptr ? 0 : st.launchers.generation(slot->index);
  st.records.gate().Persist(
      self, st.records.TaskChanged(info, generation, st.tasks.version(), st.launchers.round()));
}

void PersistNewRound(CoordinatorPointer self, const std::vector<std::string>& barrier_ids) {
  auto& st = self->state;
  if (!st.records.enabled()) return;
  st.records.gate().Persist(
      self, st.records.NewRound(barrier_ids, st.tasks.version(), st.launchers.round()));
}

}  // namespace muster
