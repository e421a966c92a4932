// Finding an HA job's leaders from etcd alone: `etcd://ENDPOINTS/NAME` (e.g.
// etcd://etcd1:2379,etcd2:2379/train-7) names the etcd cluster and the job, and every leader of
// the job registers its address there while it runs (EtcdElection). The muster command reads
// them to give its sessions (and `muster run` its tasks) every leader's address, the active one
// first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>
#include <absl/time/time.h>

#include "muster/net/agent/session/leader_addresses.h"  // kEtcdLeaderScheme
#include "muster/net/ha/etcd_client.h"

namespace muster {

struct EtcdLeaderUrl {
  std::vector<std::string> endpoints;  // HOST:PORT of etcd's members
  std::string name;                    // the HA name
};

// Parses "etcd://HOST:PORT[,HOST:PORT...]/NAME". Possible errors: InvalidArgument naming the
// text and the expected form (or the bad endpoint, or the bad name).
absl::StatusOr<EtcdLeaderUrl> ParseEtcdLeaderUrl(absl::string_view text);

// The addresses of job `name`'s leaders registered in etcd, the active one first, then the
// standbys in address order. Possible errors: NotFound (none registered: no leader of the job
// runs), Unavailable (etcd did not answer within `timeout`).
absl::StatusOr<std::vector<std::string>> ReadHaLeaders(EtcdClient& etcd, const std::string& name,
                                                       absl::Duration timeout);

// ParseEtcdLeaderUrl, a client of those endpoints, and ReadHaLeaders, within `timeout`.
// Possible errors: theirs, with the URL named.
absl::StatusOr<std::vector<std::string>> ResolveEtcdLeaders(absl::string_view url,
                                                            absl::Duration timeout);

}  // namespace muster
