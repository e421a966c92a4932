#include "muster/net/ha/etcd_election.h"

#include <utility>

#include <absl/strings/ascii.h>
#include <absl/strings/escaping.h>
#include <absl/strings/str_cat.h>

namespace muster {
namespace {

LeaderClaim ClaimOf(const mvccpb::KeyValue& kv) {
  return LeaderClaim{
      .holder = kv.value(), .create_revision = kv.create_revision(), .lease = kv.lease()};
}

}  // namespace

std::string HaStatePrefix(const std::string& name) { return HaPrefix(name) + "state/"; }

EtcdElection::EtcdElection(std::shared_ptr<EtcdClient> etcd, std::string name,
                           std::string candidate, int64_t ttl_seconds, absl::Duration call_timeout)
    : etcd_(std::move(etcd)),
      key_(HaLeaderKey(name)),
      registry_key_(HaLeadersPrefix(name) + candidate),
      candidate_(std::move(candidate)),
      ttl_seconds_(ttl_seconds),
      call_timeout_(call_timeout) {}

EtcdElection::~EtcdElection() = default;

absl::StatusOr<LeaderClaim> EtcdElection::Campaign() {
  absl::StatusOr<LeaderClaim> claim = CampaignOnce();
  // A standby's lease runs out between campaigns (only the holder refreshes its own): a new
  // one, and the campaign again.
  if (absl::IsNotFound(claim.status()) && lease_ != 0) {
    lease_ = 0;
    claim = CampaignOnce();
  }
  return claim;
}

absl::StatusOr<LeaderClaim> EtcdElection::CampaignOnce() {
  // A lease kept from an earlier campaign is refreshed first: a winner starts with a whole TTL.
  if (lease_ != 0) {
    absl::Status kept = KeepAlive();
    if (!kept.ok() && !absl::IsNotFound(kept)) return kept;
  }
  if (lease_ == 0) {
    const absl::Time asked = absl::Now();
    absl::StatusOr<etcdserverpb::LeaseGrantResponse> granted =
        etcd_->LeaseGrant(ttl_seconds_, call_timeout_);
    if (!granted.ok()) return granted.status();
    lease_ = granted->id();
    lease_deadline_ = asked + absl::Seconds(granted->ttl());
  }
  etcdserverpb::TxnRequest txn;
  auto* free = txn.add_compare();
  free->set_key(key_);
  free->set_target(etcdserverpb::Compare::CREATE);
  free->set_result(etcdserverpb::Compare::EQUAL);
  free->set_create_revision(0);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(key_);
  put->set_value(candidate_);
  put->set_lease(lease_);
  txn.add_failure()->mutable_request_range()->set_key(key_);
  // This candidate's address, under a lease of its own (once per lease: it goes with the lease).
  const int64_t lease = lease_;
  if (registered_lease_ != lease) {
    etcdserverpb::PutRequest registered;
    registered.set_key(registry_key_);
    registered.set_value(candidate_);
    registered.set_lease(lease);
    *txn.add_success()->mutable_request_put() = registered;
    *txn.add_failure()->mutable_request_put() = registered;
  }
  absl::StatusOr<etcdserverpb::TxnResponse> done = etcd_->Txn(txn, call_timeout_);
  if (!done.ok()) return done.status();
  registered_lease_ = lease;
  if (done->succeeded()) {
    return LeaderClaim{
        .holder = candidate_, .create_revision = done->header().revision(), .lease = lease_};
  }
  // Held already: by another candidate, or by this one (an earlier attempt whose answer was
  // lost). Or it ended in between: nobody holds it, and the next campaign may take it.
  const auto& range = done->responses(0).response_range();
  if (range.kvs_size() == 0) return LeaderClaim{};
  return ClaimOf(range.kvs(0));
}

absl::Status EtcdElection::KeepAlive(absl::Duration timeout) {
  if (lease_ == 0) return absl::NotFoundError("no lease: campaign first");
  const absl::Time asked = absl::Now();
  absl::StatusOr<int64_t> ttl =
      etcd_->LeaseKeepAliveOnce(lease_, timeout > absl::ZeroDuration() ? timeout : call_timeout_);
  if (absl::IsNotFound(ttl.status())) {
    lease_ = 0;
    lease_deadline_ = absl::InfinitePast();
  }
  if (!ttl.ok()) return ttl.status();
  lease_deadline_ = asked + absl::Seconds(*ttl);
  return absl::OkStatus();
}

absl::StatusOr<LeaderClaim> EtcdElection::Holder() const {
  etcdserverpb::RangeRequest request;
  request.set_key(key_);
  absl::StatusOr<etcdserverpb::RangeResponse> found = etcd_->Range(request, call_timeout_);
  if (!found.ok()) return found.status();
  if (found->kvs_size() == 0) {
    return absl::NotFoundError(absl::StrCat("no leader holds ", key_));
  }
  return ClaimOf(found->kvs(0));
}

void EtcdElection::Resign(absl::Duration timeout) {
  if (lease_ == 0) return;
  // Revoking the lease deletes every key attached to it, the leader key among them.
  (void)etcd_->LeaseRevoke(lease_, timeout > absl::ZeroDuration() ? timeout : call_timeout_);
  lease_ = 0;
  lease_deadline_ = absl::InfinitePast();
}

etcdserverpb::Compare EtcdElection::Fence(const LeaderClaim& claim) const {
  etcdserverpb::Compare fence;
  fence.set_key(key_);
  fence.set_target(etcdserverpb::Compare::CREATE);
  fence.set_result(etcdserverpb::Compare::EQUAL);
  fence.set_create_revision(claim.create_revision);
  return fence;
}

}  // namespace muster
