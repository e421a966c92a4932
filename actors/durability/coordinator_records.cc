#include "muster/actors/durability/coordinator_records.h"

#include <utility>

#include "muster/actors/durability/state_store.h"
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
    : gate_(std::move(writer)), incarnation_(incarnation), leader_(recovered) {}

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
  PutLeader(batch, version, round);
  return batch;
}

void CoordinatorRecords::SetClusterError(const absl::Status& error) {
  if (enabled()) *leader_.mutable_cluster_error() = StoreStatus(error);
}

}  // namespace muster
