#include "muster/actors/cluster/elastic_membership.h"

#include <utility>

namespace muster {

ElasticMembership::ElasticMembership(std::string job, int32_t min_tasks, int32_t max_tasks,
                                     caf::timespan settle)
    : min_tasks_(min_tasks), max_tasks_(max_tasks), settle_(settle) {
  view_.set_job_name(std::move(job));
  view_.set_min_tasks(min_tasks);
  view_.set_max_tasks(max_tasks);
}

bool ElasticMembership::Connected(int32_t id, TimePoint now) {
  connected_.insert(id);
  if (formed()) {
    RefreshView();  // it waits to be admitted at the next change
    return false;
  }
  const auto count = static_cast<int32_t>(connected_.size());
  if (count >= max_tasks_ || (count >= min_tasks_ && settle_ <= caf::timespan{0})) {
    NewVersion(connected_);
    return true;
  }
  if (count >= min_tasks_ && !settle_deadline_) settle_deadline_ = now + settle_;
  RefreshView();
  return false;
}

bool ElasticMembership::Left(int32_t id) {
  if (connected_.erase(id) == 0) return false;
  arrived_.erase(id);
  const bool was_member = members_.contains(id);
  if (!was_member) {
    if (static_cast<int32_t>(connected_.size()) < min_tasks_) settle_deadline_.reset();
    RefreshView();
    return false;
  }
  if (static_cast<int32_t>(connected_.size()) >= min_tasks_) {
    NewVersion(connected_);  // the survivors and every waiting task
  } else {
    NewVersion({});
  }
  return true;
}

bool ElasticMembership::Settle(TimePoint now) {
  if (formed() || !settle_deadline_ || now < *settle_deadline_) return false;
  if (static_cast<int32_t>(connected_.size()) < min_tasks_) return false;
  NewVersion(connected_);
  return true;
}

ElasticMembership::Arrival ElasticMembership::Arrive(int32_t id, int64_t known_version) {
  if (!members_.contains(id)) return Arrival::kWait;
  if (known_version != view_.version() || connected_.size() == members_.size()) {
    return Arrival::kAnswer;
  }
  arrived_.insert(id);
  if (arrived_.size() < members_.size()) return Arrival::kWait;
  NewVersion(connected_);
  return Arrival::kChanged;
}

bool ElasticMembership::Release() {
  if (!formed() || connected_.size() != members_.size() || arrived_.empty()) return false;
  arrived_.clear();
  return true;
}

std::vector<int32_t> ElasticMembership::NotArrived() const {
  std::vector<int32_t> missing;
  for (int32_t id : members_) {
    if (!arrived_.contains(id)) missing.push_back(id);
  }
  return missing;
}

void ElasticMembership::NewVersion(absl::btree_set<int32_t> members) {
  members_ = std::move(members);
  arrived_.clear();
  settle_deadline_.reset();
  view_.set_version(view_.version() + 1);
  RefreshView();
}

void ElasticMembership::RefreshView() {
  view_.clear_members();
  view_.clear_waiting();
  for (int32_t id : connected_) {
    if (members_.contains(id)) {
      view_.add_members(id);
    } else {
      view_.add_waiting(id);
    }
  }
}

}  // namespace muster
