// Who hears of a task's state change. The coordinator records the change in its TaskTable, then
// publishes it to the listeners registered when it started, in the order they were registered
// (job health, ephemeral keys, durability, job-state watches, barriers, alive tasks, the device
// exchange): a consumer of task states is one registration, not one more line in a hand-written
// fan-out.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "muster/actors/tasks/task_table.h"

namespace muster {

// A task's state change as its listeners see it.
struct TaskStateChange {
  const proto::CoordinatedTaskStateInfo& info;  // the new state (in the table already)
  TaskSlot& slot;                               // the task's slot, updated
  uint64_t ended_incarnation = 0;               // the incarnation this change ended (0: none ended)
  bool connected() const { return info.state() == proto::TASKSTATE_CONNECTED; }
};

class TaskStateListeners {
 public:
  using Listener = std::function<void(const TaskStateChange&)>;

  void Add(Listener listener) { listeners_.push_back(std::move(listener)); }
  void Publish(const TaskStateChange& change) const {
    for (const Listener& listener : listeners_) listener(change);
  }
  size_t size() const { return listeners_.size(); }

 private:
  std::vector<Listener> listeners_;
};

}  // namespace muster
