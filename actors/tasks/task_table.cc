#include "muster/actors/tasks/task_table.h"

#include <utility>

namespace muster {

TaskTable::TaskTable(ClusterView view) : view_(std::move(view)) {
  slots_.resize(view_.tasks().size());
  for (uint32_t i = 0; i < slots_.size(); ++i) slots_[i].index = i;
}

TaskSlot* TaskTable::Find(const proto::CoordinatedTask& task) {
  std::optional<uint32_t> index = view_.IndexOf(task);
  return index && *index < slots_.size() ? &slots_[*index] : nullptr;
}

const TaskSlot* TaskTable::Find(const proto::CoordinatedTask& task) const {
  std::optional<uint32_t> index = view_.IndexOf(task);
  return index && *index < slots_.size() ? &slots_[*index] : nullptr;
}

void TaskTable::SetActor(TaskSlot& slot, TaskActor actor) {
  owners_[actor.address()] = slot.index;
  slot.actor = std::move(actor);
}

std::optional<uint32_t> TaskTable::TakeOwner(const caf::actor_addr& actor) {
  auto owner = owners_.find(actor);
  if (owner == owners_.end()) return std::nullopt;
  uint32_t index = owner->second;
  owners_.erase(owner);
  return index;
}

void TaskTable::SetAgent(TaskSlot& slot, AgentActor agent) {
  if (slot.agent && !slot.error_pushed) --untold_agents_;
  slot.agent = std::move(agent);
  slot.error_pushed = false;
  if (slot.agent) ++untold_agents_;
}

AgentActor TaskTable::TakeUntold(TaskSlot& slot) {
  if (!slot.agent || slot.error_pushed) return AgentActor{};
  slot.error_pushed = true;
  --untold_agents_;
  return slot.agent;
}

int32_t TaskTable::ConnectedAgents() const {
  int32_t connected = 0;
  for (const TaskSlot& slot : slots_) connected += slot.agent ? 1 : 0;
  return connected;
}

uint64_t TaskTable::Live(TaskSlot& slot, const proto::CoordinatedTaskStateInfo& info,
                         caf::actor_clock::time_point now) {
  const bool connected = info.state() == proto::TASKSTATE_CONNECTED;
  const uint64_t ended =
      slot.live_incarnation != 0 && (!connected || info.incarnation() != slot.live_incarnation)
          ? slot.live_incarnation
          : 0;
  // An incarnation recovered CONNECTED by a restarted leader is live already; it connected (for
  // connected_age_ms) when it registers again.
  if (connected && (slot.live_incarnation != info.incarnation() || !slot.connected_at)) {
    slot.connected_at = now;
  } else if (!connected) {
    slot.connected_at.reset();
  }
  slot.live_incarnation = connected ? info.incarnation() : 0;
  return ended;
}

}  // namespace muster
