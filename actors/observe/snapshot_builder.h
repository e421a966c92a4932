// The parts of a job snapshot, put together without CAF: the job observer feeds it the
// coordinator's answers (task states, open barriers, directory sizes, new events) and takes the
// snapshot once every part is in. Between snapshots it keeps what outlives one: the newest
// events, the last event seen, and the job's first task failure.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>

#include "muster/proto/coordination_service.pb.h"
#include "muster/proto/observe.pb.h"

namespace muster {

class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(int recent_events = 50) : recent_limit_(recent_events) {}

  // Starts a new snapshot (the parts of the last one are dropped).
  void Start();
  void SetTasks(proto::TaskColumns tasks);
  void SetBarriers(proto::GetBarriersResponse barriers);
  void SetKvStats(proto::GetKvStatsResponse stats);
  // Events after the last one seen: kept as the newest ones. The job's first error is the log's
  // first failure (kept by the leader's event log even after its ring dropped it), or else the
  // first TASK_FAILED seen.
  void AddEvents(const proto::WatchEventsResponse& events);

  // The seq to ask events after.
  int64_t last_event_seq() const { return last_seq_; }
  // The snapshot of the parts given since Start.
  std::shared_ptr<const proto::JobSnapshot> Build(uint64_t leader_incarnation, int64_t unix_ms,
                                                  int64_t uptime_ms);

 private:
  int recent_limit_;
  proto::JobSnapshot parts_;
  std::deque<proto::JobEvent> recent_;
  int64_t last_seq_ = 0;
  proto::JobEvent first_error_;
};

}  // namespace muster
