// The coordinator's table of configured tasks: the cluster view (every task's position and
// latest state), one slot per task (its task actor, its agent while connected, the node it
// connected from, its live incarnation), which task actor owns which slot, the agents not yet
// told of an error, and the job-state version. It sends nothing: the coordinator acts on what it
// answers (e.g. TakeUntold hands back the agent an error is to be pushed to).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <caf/actor_addr.hpp>
#include <caf/actor_clock.hpp>
#include <caf/node_id.hpp>

#include "muster/actors/cluster/cluster_view.h"
#include "muster/actors/tasks/task_actor.h"
#include "muster/messages/vocabulary/interfaces.h"

namespace muster {

// A configured task as the coordinator routes to it.
struct TaskSlot {
  TaskActor actor;     // the current task actor (replaced when it is restarted)
  AgentActor agent;    // while the task is connected
  uint32_t index = 0;  // its position in ClusterView::tasks(); its heartbeat monitor slot
  std::optional<caf::actor_clock::time_point> last_heartbeat;
  // The node of the agent that last connected the task (kept after it disconnects): requests
  // that act as this task must come from there.
  caf::node_id agent_node;
  // The incarnation while the task is connected (0 otherwise; after a leader restart, the one
  // recovered CONNECTED), and when it connected (unset for a recovered incarnation until it
  // registers again).
  uint64_t live_incarnation = 0;
  std::optional<caf::actor_clock::time_point> connected_at;
  // An error was pushed to the current agent, which is in ERROR since: it would ignore another.
  // When many tasks fail at once, each agent gets one report, not one per failed task.
  bool error_pushed = false;
};

class TaskTable {
 public:
  TaskTable() = default;
  // One slot per task of `view`, in its order.
  explicit TaskTable(ClusterView view);

  ClusterView& view() { return view_; }
  const ClusterView& view() const { return view_; }

  size_t size() const { return slots_.size(); }
  TaskSlot& operator[](uint32_t index) { return slots_[index]; }
  const TaskSlot& operator[](uint32_t index) const { return slots_[index]; }
  std::vector<TaskSlot>::iterator begin() { return slots_.begin(); }
  std::vector<TaskSlot>::iterator end() { return slots_.end(); }
  std::vector<TaskSlot>::const_iterator begin() const { return slots_.begin(); }
  std::vector<TaskSlot>::const_iterator end() const { return slots_.end(); }

  // The slot of a configured task; nullptr for a task not in the configuration.
  TaskSlot* Find(const proto::CoordinatedTask& task);
  const TaskSlot* Find(const proto::CoordinatedTask& task) const;
  // The slot of a task known to be configured.
  TaskSlot& SlotOf(const proto::CoordinatedTask& task) { return *Find(task); }
  const TaskSlot& SlotOf(const proto::CoordinatedTask& task) const { return *Find(task); }

  // The task actor of `slot` from now on; its death is found again by TakeOwner.
  void SetActor(TaskSlot& slot, TaskActor actor);
  // The slot whose task actor `actor` was, forgetting it; nullopt for any other actor (a task
  // actor replaced already, or not a task actor).
  std::optional<uint32_t> TakeOwner(const caf::actor_addr& actor);

  // The slot's agent from now on (none: the task left CONNECTED); a new agent has not been told
  // of any error.
  void SetAgent(TaskSlot& slot, AgentActor agent);
  // The agent an error is to be pushed to (marked told), or none when the task is not connected
  // or its agent was told already.
  AgentActor TakeUntold(TaskSlot& slot);
  // Connected agents not told an error yet: when none is left, a mass failure's next failure
  // costs no walk over the tasks.
  int64_t untold_agents() const { return untold_agents_; }
  // Tasks with an agent (connected).
  int32_t ConnectedAgents() const;

  // The live incarnation of `slot` after it reached `info` (connected_at follows); returns the
  // incarnation that ended with this change, or 0.
  uint64_t Live(TaskSlot& slot, const proto::CoordinatedTaskStateInfo& info,
                caf::actor_clock::time_point now);

  // Bumped on every task state change (WatchJobState's version).
  int64_t version() const { return version_; }
  void set_version(int64_t version) { version_ = version; }
  int64_t BumpVersion() { return ++version_; }

 private:
  ClusterView view_;
  std::vector<TaskSlot> slots_;
  absl::flat_hash_map<caf::actor_addr, uint32_t> owners_;  // task actor -> slot index
  int64_t untold_agents_ = 0;
  int64_t version_ = 0;
};

}  // namespace muster
