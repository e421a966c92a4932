// The coordinator's own records in a leader's state dir (state_store.h): the leader record (its
// incarnation, starts, job-state version and round, and the failure told to the whole cluster)
// and one record per task. It builds the batches and owns the durable gate they pass through;
// the coordinator persists them from its actor. Without a state writer every batch is empty and
// nothing waits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <absl/status/status.h>

#include "muster/actors/durability/durable_gate.h"
#include "muster/actors/durability/state_writer_actor.h"
#include "muster/proto/coordination_service.pb.h"
#include "muster/proto/leader_state.pb.h"

namespace muster {

// The longest message of a kept cluster error: a reported error's message may be megabytes, and
// the leader record is written again with every change of any task.
inline constexpr size_t kMaxKeptErrorBytes = 4096;

// `error` as a leader keeps it for the tasks that connect later: its code, its message cut to
// kMaxKeptErrorBytes (CutText), and of its payloads the coordination payload only (without a stuck
// task's report if that is larger). An OK status stays OK.
absl::Status KeptClusterError(const absl::Status& error);

// The cluster error `leader` keeps, bounded as KeptClusterError: none when unset, told in another
// round than the record's, or not an error.
std::optional<absl::Status> RestoredClusterError(const proto::LeaderRecord& leader);

class CoordinatorRecords {
 public:
  // A restarted leader keeps the start times of this many runs.
  static constexpr int kMaxStarts = 64;

  CoordinatorRecords() = default;
  // `recovered`: the leader record a restarted leader found (its starts are kept).
  CoordinatorRecords(StateWriterActor writer, uint64_t incarnation,
                     const proto::LeaderRecord& recovered = proto::LeaderRecord());

  bool enabled() const { return gate_.enabled(); }
  DurableGate& gate() { return gate_; }
  const proto::LeaderRecord& leader() const { return leader_; }

  // A start of the leader at `unix_ms` (a calendar time for operators reading the record).
  StateBatch Started(int64_t unix_ms, int64_t version, int64_t round);
  // A task's new state and the job-state version.
  StateBatch TaskChanged(const proto::CoordinatedTaskStateInfo& info, int64_t generation,
                         int64_t version, int64_t round);
  // A new round: the barrier results of the last one are dropped, and the cluster's failure.
  StateBatch NewRound(const std::vector<std::string>& barrier_ids, int64_t version, int64_t round);
  // A failure told to the whole cluster in `round` (the coordinator's cluster_error, as
  // KeptClusterError leaves it): written with the next leader record (the failed task's
  // change), so that the tasks that connect to a restarted leader or the next HA leader are told
  // it too.
  void SetClusterError(const absl::Status& error, int64_t round);

 private:
  void PutLeader(StateBatch& batch, int64_t version, int64_t round);

  DurableGate gate_;
  uint64_t incarnation_ = 0;
  proto::LeaderRecord leader_;
};

}  // namespace muster
