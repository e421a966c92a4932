#include "muster/actors/supervision/process_fence.h"

#include <utility>

#include <absl/strings/str_cat.h>

#include "muster/messages/task_name.h"

namespace muster {

void ProcessFence::Fence(const caf::node_id& node, Replaced replaced) {
  if (node == caf::node_id{} || capacity_ == 0) return;
  // The first entry stays: it names the generation the node really ran (a generation that
  // never connected leaves the slot on the node before it).
  auto [it, inserted] = fenced_.try_emplace(node, std::move(replaced));
  if (!inserted) return;
  order_.push_back(node);
  if (order_.size() > capacity_) {
    fenced_.erase(order_.front());
    order_.pop_front();
  }
}

absl::Status ProcessFence::Check(const caf::node_id& node, int64_t round) const {
  auto it = fenced_.find(node);
  if (it == fenced_.end()) return absl::OkStatus();
  const Replaced& old = it->second;
  std::string since = round > old.round
                          ? absl::StrCat("the job restarted every task since (round ", round, ")")
                          : absl::StrCat(TaskName(old.task), " was restarted since");
  return absl::FailedPreconditionError(absl::StrCat(
      "This process ran ", TaskName(old.task), " as generation ", old.generation, " of round ",
      old.round, ", and ", since,
      ": its requests are refused so that nothing of it reaches the new generation; its launcher "
      "stops it (a program should exit when its agent reports an error)"));
}

}  // namespace muster
