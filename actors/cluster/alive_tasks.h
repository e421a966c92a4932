// GetAliveTasks agreement: callers that ask about the same set of tasks wait together until
// every task of the set that is still connected has asked; then all of them get the same
// answer (the connected tasks and their incarnations). Re-evaluated after every state change,
// so a task that dies while others wait is left out instead of blocking them.
#pragma once

#include <string>
#include <vector>

#include <absl/container/flat_hash_set.h>
#include <caf/typed_response_promise.hpp>

#include "muster/actors/cluster/cluster_view.h"
#include "muster/messages/vocabulary/proto_inspect.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

class AliveTasks {
 public:
  using Promise = caf::typed_response_promise<proto::GetAliveTasksResponse>;

  // Adds `requester`'s call for `tasks` (known, containing the requester) and answers the
  // group when it is complete.
  void Join(const ClusterView& view, std::vector<proto::CoordinatedTask> tasks,
            const proto::CoordinatedTask& requester, Promise promise);
  // Answers every group that became complete.
  void Refresh(const ClusterView& view);
  size_t pending_groups() const { return groups_.size(); }

 private:
  struct Group {
    std::vector<proto::CoordinatedTask> tasks;  // sorted, unique
    absl::flat_hash_set<std::string> arrived;   // task names
    std::vector<Promise> promises;
  };
  // Answers `group` when every connected member arrived; returns whether it did.
  static bool Complete(const ClusterView& view, Group& group);
  std::vector<Group> groups_;
};

}  // namespace muster
