#include "muster/actors/durability/coordinator_records.h"

#include <utility>

#include "muster/actors/durability/state_store.h"
#include "muster/messages/status/cut_text.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

proto::TaskRecord RecordOf(const proto::CoordinatedTaskStateInfo& info, int64_t generation) {
  proto::TaskRecord record;
  *record.mutable_task() = info.task();
  record.set_state(info.state());
  record.set_incarnation(info.incarnation());
  record.set_error_code(info.error_code());
  record.set_error_message(info.error_message());
  record.set_generation(generation);
  return record;
}

}  // namespace

CoordinatorRecords::CoordinatorRecords(StateWriterActor writer, uint64_t incarnation,
                                       const proto::LeaderRecord& recovered)
    : gate_(std::move(writer)), incarnation_(incarnation), leader_(recovered) {
  // One that does not apply (of an earlier round) is not written again; one that does is
  // written again as the coordinator keeps it (bounded).
  if (std::optional<absl::Status> kept = RestoredClusterError(leader_)) {
    *leader_.mutable_cluster_error() = StoreStatus(*kept);
  } else {
    leader_.clear_cluster_error();
    leader_.clear_cluster_error_round();
  }
}

void CoordinatorRecords::PutLeader(StateBatch& batch, int64_t version, int64_t round) {
  leader_.set_format(kStateFormat);
  leader_.set_incarnation(incarnation_);
  leader_.set_version(version);
  leader_.set_round(round);
  batch.Put(LeaderStateKey(), leader_.SerializeAsString());
}

StateBatch CoordinatorRecords::Started(int64_t unix_ms, int64_t version, int64_t round) {
  StateBatch batch;
  if (!enabled()) return batch;
  leader_.set_starts(leader_.starts() + 1);
  leader_.add_started_unix_ms(unix_ms);
  auto* starts = leader_.mutable_started_unix_ms();
  if (starts->size() > kMaxStarts) starts->erase(starts->begin(), starts->end() - kMaxStarts);
  PutLeader(batch, version, round);
  return batch;
}

StateBatch CoordinatorRecords::TaskChanged(const proto::CoordinatedTaskStateInfo& info,
                                           int64_t generation, int64_t version, int64_t round) {
  StateBatch batch;
  if (!enabled()) return batch;
  batch.Put(TaskStateKey(TaskName(info.task())), RecordOf(info, generation).SerializeAsString());
  PutLeader(batch, version, round);
  return batch;
}

StateBatch CoordinatorRecords::NewRound(const std::vector<std::string>& barrier_ids,
                                        int64_t version, int64_t round) {
  StateBatch batch;
  if (!enabled()) return batch;
  for (const std::string& id : barrier_ids) batch.Delete(BarrierStateKey(id));
  leader_.clear_cluster_error();
  leader_.clear_cluster_error_round();
  PutLeader(batch, version, round);
  return batch;
}

void CoordinatorRecords::SetClusterError(const absl::Status& error, int64_t round) {
  if (!enabled()) return;
  *leader_.mutable_cluster_error() = StoreStatus(error);
  leader_.set_cluster_error_round(round);
}

namespace {

// `error` with its message cut to `max_bytes` and its coordination payload only.
absl::Status Bounded(const absl::Status& error, size_t max_bytes) {
  if (error.ok()) return error;
  absl::Status kept(error.code(), CutText(error.message(), max_bytes));
  if (std::optional<proto::CoordinationServiceError> payload = GetCoordinationError(error)) {
    if (payload->ByteSizeLong() > kMaxKeptErrorBytes) payload->clear_stuck();
    kept.SetPayload(kCoordinationErrorUrl, absl::Cord(payload->SerializeAsString()));
  }
  return kept;
}

}  // namespace

absl::Status KeptClusterError(const absl::Status& error) {
  return Bounded(error, kMaxKeptErrorBytes);
}

std::optional<absl::Status> RestoredClusterError(const proto::LeaderRecord& leader) {
  if (!leader.has_cluster_error() || leader.cluster_error_round() != leader.round()) {
    return std::nullopt;
  }
  absl::Status error = LoadStatus(leader.cluster_error());
  if (error.ok()) return std::nullopt;
  // A kept message may end with CutText's note of what was cut: room for it.
  return Bounded(error, kMaxKeptErrorBytes + 64);
}

}  // namespace muster
