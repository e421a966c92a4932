#include "muster/actors/cluster/alive_tasks.h"

#include <algorithm>

#include "muster/messages/task_name.h"

namespace muster {

void AliveTasks::Join(const ClusterView& view, std::vector<proto::CoordinatedTask> tasks,
                      const proto::CoordinatedTask& requester, Promise promise) {
  std::sort(tasks.begin(), tasks.end(), TaskLess);
  tasks.erase(std::unique(tasks.begin(), tasks.end(), SameTask), tasks.end());
  auto same_set = [&](const Group& g) {
    return std::equal(g.tasks.begin(), g.tasks.end(), tasks.begin(), tasks.end(), SameTask);
  };
  auto it = std::find_if(groups_.begin(), groups_.end(), same_set);
  if (it == groups_.end()) it = groups_.insert(groups_.end(), Group{std::move(tasks), {}, {}});
  it->arrived.insert(TaskName(requester));
  it->promises.push_back(std::move(promise));
  if (Complete(view, *it)) groups_.erase(it);
}

void AliveTasks::Refresh(const ClusterView& view) {
  groups_.erase(std::remove_if(groups_.begin(), groups_.end(),
                               [&](Group& group) { return Complete(view, group); }),
                groups_.end());
}

bool AliveTasks::Complete(const ClusterView& view, Group& group) {
  proto::GetAliveTasksResponse response;
  for (const auto& task : group.tasks) {
    const auto* info = view.Find(task);
    if (info == nullptr || info->state() != proto::TASKSTATE_CONNECTED) continue;
    if (!group.arrived.contains(TaskName(task))) return false;
    *response.add_alive_tasks() = task;
    response.add_incarnations(info->incarnation());
  }
  for (auto& promise : group.promises) promise.deliver(response);
  return true;
}

}  // namespace muster
