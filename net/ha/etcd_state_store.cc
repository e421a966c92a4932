#include "muster/net/ha/etcd_state_store.h"

#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/random/random.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>

#include "muster/actors/durability/durable_gate.h"
#include "muster/net/ha/etcd_election.h"

namespace muster {
namespace {

// Records per read of Load().
constexpr int64_t kPage = 1000;

using Op = std::pair<std::string, std::optional<std::string>>;

size_t SizeOf(const Op& op) { return op.first.size() + (op.second ? op.second->size() : 0) + 16; }

}  // namespace

std::shared_ptr<EtcdStateStore> EtcdStateStore::Open(std::shared_ptr<EtcdClient> etcd,
                                                     EtcdStateOptions options) {
  return std::shared_ptr<EtcdStateStore>(new EtcdStateStore(std::move(etcd), std::move(options)));
}

EtcdStateStore::EtcdStateStore(std::shared_ptr<EtcdClient> etcd, EtcdStateOptions options)
    : etcd_(std::move(etcd)),
      options_(std::move(options)),
      prefix_(HaStatePrefix(options_.name)),
      counter_key_(HaPrefix(options_.name) + "writes"),
      location_(absl::StrCat("etcd ", etcd_->endpoints(), " under ", prefix_)),
      writer_(absl::StrCat(absl::Hex(absl::Uniform<uint64_t>(absl::BitGen())))) {
  // One operation of every transaction is the counter's.
  if (options_.max_txn_ops < 2) options_.max_txn_ops = 2;
}

absl::Status EtcdStateStore::ReadCounter() const {
  etcdserverpb::RangeRequest read;
  read.set_key(counter_key_);
  absl::StatusOr<etcdserverpb::RangeResponse> found = etcd_->Range(read, options_.read_timeout);
  if (!found.ok()) return found.status();
  counter_ = 0;
  counter_value_.clear();
  if (found->kvs_size() == 1) counter_value_ = found->kvs(0).value();
  if (found->kvs_size() == 1 &&
      !absl::SimpleAtoi(absl::string_view(counter_value_).substr(0, counter_value_.find(' ')),
                        &counter_)) {
    return absl::DataLossError(absl::StrCat("the write counter ", counter_key_, " of ", location_,
                                            " is not a number: delete the job's state (etcdctl "
                                            "del --prefix ",
                                            HaPrefix(options_.name), ")"));
  }
  counter_known_ = true;
  return absl::OkStatus();
}

absl::StatusOr<proto::RecoveredState> EtcdStateStore::Load() const {
  StateRecords records(
      absl::StrCat("the state in ", location_),
      absl::StrCat("restore it from an etcd snapshot, or delete it (etcdctl del --prefix ",
                   HaPrefix(options_.name), ") to start with an empty state"),
      absl::StrCat("delete it (etcdctl del --prefix ", HaPrefix(options_.name), ")"));
  if (absl::Status counted = ReadCounter(); !counted.ok()) return counted;
  etcdserverpb::RangeRequest page;
  page.set_key(prefix_);
  page.set_range_end(PrefixEnd(prefix_));
  page.set_limit(kPage);
  for (;;) {
    absl::StatusOr<etcdserverpb::RangeResponse> read = etcd_->Range(page, options_.read_timeout);
    if (!read.ok()) return read.status();
    for (const mvccpb::KeyValue& kv : read->kvs()) {
      absl::string_view key = kv.key();
      key.remove_prefix(prefix_.size());
      if (absl::Status added = records.Add(key, kv.value()); !added.ok()) return added;
    }
    if (!read->more() || read->kvs_size() == 0) break;
    // The next page, at the same revision: one consistent picture.
    page.set_revision(read->header().revision());
    page.set_key(read->kvs(read->kvs_size() - 1).key() + std::string(1, '\0'));
  }
  return std::move(records).Finish();
}

absl::Status EtcdStateStore::Failed(absl::Status status) {
  if (!options_.on_failure) return status;
  options_.on_failure(status);
  // Its leader steps down: the calls that wait on this write are re-sent to the next leader,
  // unless the write itself is at fault (a change over etcd's limits would fail there too).
  if (absl::IsInvalidArgument(status)) return status;
  return PausesLeader(std::move(status));
}

absl::Status EtcdStateStore::Commit(etcdserverpb::TxnRequest& txn) {
  // Applies only from the count it was made for, and moves the count on.
  auto* from = txn.add_compare();
  from->set_key(counter_key_);
  if (counter_value_.empty()) {
    from->set_target(etcdserverpb::Compare::VERSION);
    from->set_version(0);
  } else {
    from->set_target(etcdserverpb::Compare::VALUE);
    from->set_value(counter_value_);
  }
  from->set_result(etcdserverpb::Compare::EQUAL);
  const std::string next_value = absl::StrCat(counter_ + 1, " ", writer_);
  auto* next = txn.add_success()->mutable_request_put();
  next->set_key(counter_key_);
  next->set_value(next_value);
  txn.add_failure()->mutable_request_range()->set_key(counter_key_);
  if (options_.fence) {
    *txn.add_compare() = *options_.fence;
    txn.add_failure()->mutable_request_range()->set_key(options_.fence->key());
  }
  absl::StatusOr<etcdserverpb::TxnResponse> done = etcd_->Txn(txn, options_.write_timeout);
  if (absl::IsInvalidArgument(done.status()) || absl::IsResourceExhausted(done.status())) {
    return absl::InvalidArgumentError(absl::StrCat(
        done.status().message(), " (", txn.success_size(),
        " operations in one transaction: raise etcd's --max-txn-ops and --max-request-bytes)"));
  }
  if (!done.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot write the job's state to ", location_, ": ", done.status().message()));
  }
  if (done->succeeded()) {
    ++counter_;
    counter_value_ = next_value;
    return absl::OkStatus();
  }
  // Not applied now. This very transaction may have been applied already (the client sent it
  // again after its first answer was lost): the counter then says so, and it was fenced when it
  // applied. Or the fence is gone.
  const auto& count = done->responses(0).response_range();
  const std::string now = count.kvs_size() == 1 ? count.kvs(0).value() : std::string();
  if (now == next_value) {
    ++counter_;
    counter_value_ = next_value;
    return absl::OkStatus();
  }
  bool fenced = true;
  if (options_.fence) {
    const auto& leader = done->responses(1).response_range();
    fenced = leader.kvs_size() == 1 &&
             leader.kvs(0).create_revision() == options_.fence->create_revision();
  }
  if (!fenced) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this leader is no longer the active leader of HA job ", options_.name,
        " (its etcd lease ended, or another leader took over): it acknowledges nothing more; "
        "the active leader has the job"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "another writer changed the state in ", location_, " (its write counter is \"", now,
      "\", this leader's last was \"", counter_value_, "\"): two leaders ran HA job ",
      options_.name, " at once; this one acknowledges nothing more"));
}

absl::Status EtcdStateStore::Write(const StateBatch& batch) {
  if (closed_) {
    return absl::InternalError(
        absl::StrCat("cannot write the state to ", location_, ": the store is closed"));
  }
  if (!counter_known_) {
    if (absl::Status counted = ReadCounter(); !counted.ok()) return Failed(counted);
  }
  const size_t max_ops = options_.max_txn_ops - 1;  // one is the counter's
  std::vector<size_t> ends = batch.unit_ends;
  ends.push_back(batch.ops.size());
  // The transaction being filled: each key's last change (etcd refuses a key twice in one).
  std::vector<const Op*> ops;
  absl::flat_hash_map<absl::string_view, size_t> slot;
  size_t bytes = 0;
  auto flush = [&]() -> absl::Status {
    if (ops.empty()) return absl::OkStatus();
    etcdserverpb::TxnRequest txn;
    for (const Op* op : ops) {
      auto* request = txn.add_success();
      std::string key = prefix_ + op->first;
      if (op->second) {
        request->mutable_request_put()->set_key(std::move(key));
        request->mutable_request_put()->set_value(*op->second);
      } else {
        request->mutable_request_delete_range()->set_key(std::move(key));
      }
    }
    ops.clear();
    slot.clear();
    bytes = 0;
    return Commit(txn);
  };
  auto add = [&](const Op& op) {
    auto [it, added] = slot.try_emplace(op.first, ops.size());
    if (added) {
      ops.push_back(&op);
      bytes += SizeOf(op);
    } else {
      bytes = bytes + SizeOf(op) - SizeOf(*ops[it->second]);
      ops[it->second] = &op;
    }
  };
  size_t begin = 0;
  for (size_t end : ends) {
    if (end <= begin || end > batch.ops.size()) continue;
    absl::flat_hash_set<absl::string_view> fresh;
    size_t unit_bytes = 0;
    for (size_t i = begin; i < end; ++i) {
      if (!slot.contains(batch.ops[i].first)) fresh.insert(batch.ops[i].first);
      unit_bytes += SizeOf(batch.ops[i]);
    }
    if (!ops.empty() &&
        (ops.size() + fresh.size() > max_ops || bytes + unit_bytes > options_.max_txn_bytes)) {
      if (absl::Status done = flush(); !done.ok()) return Failed(done);
    }
    // A unit over the limits on its own (a trim of many old records) goes in parts.
    for (size_t i = begin; i < end; ++i) {
      const Op& op = batch.ops[i];
      if (!slot.contains(op.first) &&
          (ops.size() + 1 > max_ops || bytes + SizeOf(op) > options_.max_txn_bytes) &&
          !ops.empty()) {
        if (absl::Status done = flush(); !done.ok()) return Failed(done);
      }
      add(op);
    }
    begin = end;
  }
  if (absl::Status done = flush(); !done.ok()) return Failed(done);
  return absl::OkStatus();
}

}  // namespace muster
