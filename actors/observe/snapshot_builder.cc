#include "muster/actors/observe/snapshot_builder.h"

#include <utility>

namespace muster {

void SnapshotBuilder::Start() { parts_.Clear(); }

void SnapshotBuilder::SetTasks(proto::TaskColumns tasks) {
  parts_.set_version(tasks.version());
  *parts_.mutable_tasks() = std::move(tasks);
}

void SnapshotBuilder::SetBarriers(proto::GetBarriersResponse barriers) {
  *parts_.mutable_barriers() = std::move(*barriers.mutable_barriers());
}

void SnapshotBuilder::SetKvStats(proto::GetKvStatsResponse stats) {
  *parts_.mutable_kv_directories() = std::move(*stats.mutable_directories());
}

void SnapshotBuilder::AddEvents(const proto::WatchEventsResponse& events) {
  if (events.has_first_failure() && first_error_.kind() == proto::JOB_EVENT_UNSPECIFIED) {
    first_error_ = events.first_failure();
  }
  for (const proto::JobEvent& event : events.events()) {
    if (event.seq() <= last_seq_) continue;  // already seen
    last_seq_ = event.seq();
    if (event.kind() == proto::TASK_FAILED && first_error_.kind() == proto::JOB_EVENT_UNSPECIFIED) {
      first_error_ = event;
    }
    recent_.push_back(event);
    while (recent_.size() > static_cast<size_t>(recent_limit_)) recent_.pop_front();
  }
}

std::shared_ptr<const proto::JobSnapshot> SnapshotBuilder::Build(uint64_t leader_incarnation,
                                                                 int64_t unix_ms,
                                                                 int64_t uptime_ms) {
  auto snapshot = std::make_shared<proto::JobSnapshot>(std::move(parts_));
  parts_.Clear();
  snapshot->set_leader_incarnation(leader_incarnation);
  snapshot->set_taken_unix_ms(unix_ms);
  snapshot->set_uptime_ms(uptime_ms);
  snapshot->set_last_event_seq(last_seq_);
  for (const proto::JobEvent& event : recent_) *snapshot->add_recent_events() = event;
  if (first_error_.kind() != proto::JOB_EVENT_UNSPECIFIED) {
    *snapshot->mutable_first_error() = first_error_;
  }
  return snapshot;
}

}  // namespace muster
