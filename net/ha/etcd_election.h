// The election of a job's active leader on etcd. Every leader started with the same HA name
// campaigns on one key, "muster/<name>/leader", holding it with a lease of its own: the
// candidate whose put created the key is the active leader, and the key's value is its address.
// It keeps its lease alive; when it stops, or its host dies or is cut off, the lease ends
// after its TTL and the key with it, and the next campaign of a standby creates the key anew.
// Every write of the active leader's state carries Fence(): it applies only while the key the
// leader created exists, so a leader that lost its lease can never write again. Every candidate
// also registers its address under "muster/<name>/leaders/", with the same lease (standbys
// refresh theirs at each campaign), so that a client given only etcd finds every leader of the
// job (ReadHaLeadersThroughGateway, net/agent/session/etcd/ha_leader_registry.h).
//
//   NO LEASE --Campaign: lease granted, key free--> ACTIVE (won)
//            --Campaign: key held by another------> STANDBY (holder known; campaign again later)
//   ACTIVE --KeepAlive NotFound (lease expired)--> NO LEASE
//   any --Resign--> NO LEASE (key deleted if it was ours, lease revoked)
//
// Blocking (etcd calls): for the campaign's own thread. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/time/time.h>

#include "muster/net/agent/session/etcd/ha_leader_registry.h"
#include "muster/net/ha/etcd/etcd_client.h"

namespace muster {

// Who holds the leader key.
struct LeaderClaim {
  std::string holder;           // the value: the active leader's address
  int64_t create_revision = 0;  // the revision that created the key (the fence)
  int64_t lease = 0;            // the holder's lease
};

// etcd's keys of job `name` (the others are in net/agent/session/etcd/ha_leader_registry.h): its
// state, "muster/<name>/state/".
std::string HaStatePrefix(const std::string& name);

class EtcdElection {
 public:
  // `candidate` is what the key says while this one holds it (its address).
  EtcdElection(std::shared_ptr<EtcdClient> etcd, std::string name, std::string candidate,
               int64_t ttl_seconds, absl::Duration call_timeout = absl::Seconds(2));
  ~EtcdElection();

  // One campaign: takes a lease if it has none, and the key if nobody holds it. Returns who
  // holds it now (this candidate when won() says so). Possible errors: Unavailable (etcd).
  absl::StatusOr<LeaderClaim> Campaign();
  bool won(const LeaderClaim& claim) const { return lease_ != 0 && claim.lease == lease_; }

  // Refreshes the lease, waiting at most `timeout` (the call timeout when zero). Possible
  // errors: NotFound (the lease expired: the key is gone, and another candidate may hold it),
  // Unavailable (etcd did not answer; the lease runs out at lease_deadline() unless a later
  // refresh gets through).
  absl::Status KeepAlive(absl::Duration timeout = absl::ZeroDuration());
  // The lease held now (0: none), for a refresh from another thread while this one is busy.
  int64_t lease() const { return lease_; }
  // When the lease surely ends without another refresh (this process's clock).
  absl::Time lease_deadline() const { return lease_deadline_; }

  // Who holds the key now. Possible errors: NotFound (nobody), Unavailable.
  absl::StatusOr<LeaderClaim> Holder() const;

  // Deletes the key if this candidate holds it and revokes the lease (best effort, waiting at
  // most `timeout`; the call timeout when zero). Either way the lease is dropped: the next
  // campaign takes a new one, so a key this candidate still held under the old one (etcd keeps
  // leases alive while it has no quorum) is never won back with the old key's fence, which an
  // old write still on its way may carry.
  void Resign(absl::Duration timeout = absl::ZeroDuration());

  // The condition every write of the holder of `claim` carries.
  etcdserverpb::Compare Fence(const LeaderClaim& claim) const;

  const std::string& key() const { return key_; }
  int64_t ttl_seconds() const { return ttl_seconds_; }
  const std::shared_ptr<EtcdClient>& etcd() const { return etcd_; }

 private:
  absl::StatusOr<LeaderClaim> CampaignOnce();

  std::shared_ptr<EtcdClient> etcd_;
  std::string key_;
  std::string registry_key_;  // HaLeadersPrefix + candidate
  std::string candidate_;
  int64_t ttl_seconds_;
  absl::Duration call_timeout_;
  int64_t lease_ = 0;
  absl::Time lease_deadline_ = absl::InfinitePast();
  int64_t registered_lease_ = 0;  // the lease this candidate's address was registered with
};

}  // namespace muster
