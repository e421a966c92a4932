// The membership of one elastic job (CoordinatedJob.min_tasks), without actors: which of its
// connected tasks take part (the members; a member's rank is its position) and which wait to be
// admitted. The coordinator feeds it the job's task states and the arrivals at the job's safe
// point (WaitForMembership) and acts on what it returns. Every change is a new version, and
// every new membership is every connected task of the job.
//
//   FORMING --min_tasks connected and the settle time passed, or max_tasks connected--> FORMED
//   FORMED  --a member left, at least min_tasks still connected--> FORMED (version + 1)
//   FORMED  --every member arrived at the safe point while tasks wait--> FORMED (version + 1)
//   FORMED  --a member left, fewer than min_tasks connected--> FORMING (version + 1, no members)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/btree_set.h>
#include <caf/actor_clock.hpp>
#include <caf/timespan.hpp>

#include "muster/proto/coordination_service.pb.h"

namespace muster {

class ElasticMembership {
 public:
  using TimePoint = caf::actor_clock::time_point;

  // A job of `min_tasks` to `max_tasks` tasks (1 <= min_tasks <= max_tasks) that forms
  // `settle` after its min_tasks-th task connected (at once when `settle` is zero).
  ElasticMembership(std::string job, int32_t min_tasks, int32_t max_tasks, caf::timespan settle);

  // Task `id` connected (a new incarnation). True when the membership changed.
  bool Connected(int32_t id, TimePoint now);
  // Task `id` left: disconnected, failed, or replaced by a new incarnation. True when the
  // membership changed.
  bool Left(int32_t id);
  // The settle deadline may have passed: true when the membership formed.
  bool Settle(TimePoint now);

  enum class Arrival {
    kAnswer,   // answer now with membership(): it changed since, or nobody waits to be admitted
    kWait,     // wait for the next change (every member's arrival, or a task not admitted yet)
    kChanged,  // this arrival completed the safe point: a new membership answers every waiter
  };
  // Task `id` at the safe point, running with `known_version` (any version but the current
  // one, e.g. one from before a leader restart, is out of date: answered at once).
  Arrival Arrive(int32_t id, int64_t known_version);
  // Task `id` no longer waits at the safe point (its call timed out or ended).
  void Withdraw(int32_t id) { arrived_.erase(id); }
  // When no task waits to be admitted any more (the one that did left), the members at the
  // safe point go on with the membership they have: true when there were any (forgotten now).
  bool Release();

  const proto::JobMembership& membership() const { return view_; }
  int64_t version() const { return view_.version(); }
  bool formed() const { return !members_.empty(); }
  bool IsMember(int32_t id) const { return members_.contains(id); }
  bool IsConnected(int32_t id) const { return connected_.contains(id); }
  size_t num_connected() const { return connected_.size(); }
  // The members that have not arrived at the safe point, ascending.
  std::vector<int32_t> NotArrived() const;
  // When the job forms unless a task leaves first (none while it is formed, or too small).
  std::optional<TimePoint> settle_deadline() const { return settle_deadline_; }

 private:
  // A new version with `members`: every connected task (the job forms), or none (fewer than
  // min_tasks remain).
  void NewVersion(absl::btree_set<int32_t> members);
  // Rebuilds the waiting list of the view (connected tasks that are not members).
  void RefreshView();

  int32_t min_tasks_;
  int32_t max_tasks_;
  caf::timespan settle_;
  absl::btree_set<int32_t> connected_;
  absl::btree_set<int32_t> members_;
  absl::btree_set<int32_t> arrived_;
  std::optional<TimePoint> settle_deadline_;
  proto::JobMembership view_;
};

}  // namespace muster
