// A leader's state on etcd, for standby leaders (docs/operations.md, "High availability"): the
// records of actors/durability/state_store.h under "muster/<name>/state/<key>". Every write is
// a transaction that carries the election's fence (EtcdElection::Fence): it applies only while
// the leader that opened the store still holds the leader key, so a leader that lost its lease
// cannot write, whatever its clock says. Each transaction also moves a write counter
// ("muster/<name>/writes": the count and the writing store's random id) on by one, and
// applies only from the value it was made for: a
// transaction that the client sent again (its first answer was lost) and that etcd applied
// late can never overwrite a later one, and a resent one that had applied is recognised.
// A unit of a batch is one transaction; a group commit's units share transactions up to
// etcd's limits (max_txn_ops, max_txn_bytes); a unit over them is split (atomic per part).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <absl/time/time.h>

#include "muster/actors/durability/state_store.h"
#include "muster/net/ha/etcd/etcd_client.h"

namespace muster {

struct EtcdStateOptions {
  // The job's HA name (the state lives under HaStatePrefix(name)).
  std::string name;
  // Set: every write carries it (the active leader's fence). Unset: writes are not fenced
  // (tools, tests).
  std::optional<etcdserverpb::Compare> fence;
  // etcd's own limits per transaction (its --max-txn-ops, default 128, and
  // --max-request-bytes, default 1.5 MiB, of which this leaves room for the request's frame).
  size_t max_txn_ops = 128;
  size_t max_txn_bytes = 1 << 20;
  // How long a write (a read, at Load) keeps trying while etcd does not answer.
  absl::Duration write_timeout = absl::Seconds(10);
  absl::Duration read_timeout = absl::Seconds(10);
  // Told of a write that failed (from the writer's thread): the writer fails every later one
  // too, so the leader must give the job up (HaLeader steps down).
  std::function<void(const absl::Status&)> on_failure;
};

class EtcdStateStore : public StateStore {
 public:
  static std::shared_ptr<EtcdStateStore> Open(std::shared_ptr<EtcdClient> etcd,
                                              EtcdStateOptions options);

  // Also Unavailable (etcd did not answer within read_timeout). The records are read at one
  // revision, whatever is written meanwhile.
  absl::StatusOr<proto::RecoveredState> Load() const override;
  // Possible errors: FailedPrecondition (the fence no longer holds: this leader lost the
  // election; or another writer moved the counter; nothing of the batch from that transaction
  // on is written), Unavailable (etcd did not answer within write_timeout: the batch may or may
  // not be written), InvalidArgument (one change is over etcd's limits, naming the limit to
  // raise). Each failure is also told to on_failure, and then (but InvalidArgument) carries
  // PausesLeader's mark (durable_gate.h): the calls waiting on it are left for the next leader.
  absl::Status Write(const StateBatch& batch) override;
  void Close() override { closed_ = true; }
  // "etcd HOST:PORT,... under muster/<name>/state/"
  const std::string& location() const override { return location_; }

 private:
  EtcdStateStore(std::shared_ptr<EtcdClient> etcd, EtcdStateOptions options);
  // One transaction of `txn`'s ops (with the fence and the counter), retried while etcd does
  // not answer.
  absl::Status Commit(etcdserverpb::TxnRequest& txn);
  absl::Status Failed(absl::Status status);
  // Reads the write counter (before the first write of a store that did not Load).
  absl::Status ReadCounter() const;

  std::shared_ptr<EtcdClient> etcd_;
  EtcdStateOptions options_;
  std::string prefix_;
  std::string counter_key_;
  std::string location_;
  bool closed_ = false;
  mutable bool counter_known_ = false;
  mutable uint64_t counter_ = 0;       // transactions applied so far
  mutable std::string counter_value_;  // the counter's value in etcd: "<count> <writer>"
  const std::string writer_;           // this store's random id, in the counter's value
};

}  // namespace muster
