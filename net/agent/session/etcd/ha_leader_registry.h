// Where an HA job's leaders are found in etcd (docs/operations.md, "High availability"), for
// those who know only etcd: `etcd://ENDPOINTS/NAME` (e.g. etcd://etcd1:2379,etcd2:2379/train-7)
// names the etcd cluster and the job. Every leader of the job registers its address under
// "muster/<name>/leaders/" while it runs, and the active one holds "muster/<name>/leader"
// (net/ha/etcd_election.h). The leaders talk to etcd through net/ha's EtcdClient; an agent
// reads the two keys through etcd's JSON gateway (POST /v3/kv/txn on the client port), with
// the HTTP client the library has already, so that a task needs no gRPC.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>
#include <absl/time/time.h>

#include "muster/net/agent/session/etcd/etcd_security.h"
#include "muster/net/agent/session/leader_addresses.h"  // kEtcdLeaderScheme

namespace muster {

// Possible errors: InvalidArgument (empty, longer than 128 characters, or another character
// than letters, digits, '-', '_' and '.').
absl::Status CheckHaName(const std::string& name);

// etcd's keys of job `name`: "muster/<name>/" and below.
std::string HaPrefix(const std::string& name);
std::string HaLeaderKey(const std::string& name);
std::string HaLeadersPrefix(const std::string& name);
// The first key after every key that starts with `prefix` (etcd's range_end for a prefix).
std::string PrefixEnd(const std::string& prefix);

// Parses "HOST:PORT,HOST:PORT" (an "http://" or "https://" in front of each is accepted, as
// etcdctl's --endpoints takes them; https:// is TLS: EtcdEndpointsUseTls). Possible errors:
// InvalidArgument (empty, a malformed endpoint, https:// mixed with http:// or bare endpoints),
// naming the endpoint.
absl::StatusOr<std::vector<std::string>> ParseEtcdEndpoints(absl::string_view text);
// True when an endpoint of `text` is given as https://.
bool EtcdEndpointsUseTls(absl::string_view text);

struct EtcdLeaderUrl {
  std::vector<std::string> endpoints;  // HOST:PORT of etcd's members
  std::string name;                    // the HA name
  bool tls = false;                    // the endpoints were given as https://
};

// Parses "etcd://HOST:PORT[,HOST:PORT...]/NAME" (each endpoint may be https://HOST:PORT: TLS).
// Possible errors: InvalidArgument naming the text and the expected form (or the bad endpoint,
// or the bad name).
absl::StatusOr<EtcdLeaderUrl> ParseEtcdLeaderUrl(absl::string_view text);

// The leaders registered (`registered`, at most 64) in the order a client tries them: the
// active one (`active`, when a leader holds the key) first, then the others in address order;
// at most LeaderAddresses::kMax, each one HOST:PORT (other values are skipped).
// Possible errors: NotFound (none registered: no leader of job `name` runs), naming `endpoints`.
absl::StatusOr<std::vector<std::string>> OrderHaLeaders(std::vector<std::string> registered,
                                                        const std::optional<std::string>& active,
                                                        const std::string& name,
                                                        const std::string& endpoints);

// ParseEtcdLeaderUrl, then the leaders read through etcd's JSON gateway, one member after the
// other until one answers, within `timeout`; ordered as by OrderHaLeaders. TLS and etcd's user
// as EtcdSecurityFromEnv says. Blocking: for a
// caller's thread (Agent::Create) or a detached actor's (ha_registry_reader.h), never an
// event-based actor's. Possible errors: InvalidArgument (the
// URL), Unavailable (no member answered, or not with JSON of the ranges asked for, within at
// most 256 KiB, naming the URL and the last error), NotFound (no leader registered),
// FailedPrecondition (a member refused the request with HTTP 4xx: its gateway is off),
// InvalidArgument (MUSTER_ETCD_* name files that cannot be read; etcd refused the user or its
// password), PermissionDenied (the user may not read the job's keys).
absl::StatusOr<std::vector<std::string>> ReadHaLeadersThroughGateway(absl::string_view url,
                                                                     absl::Duration timeout);
// The same with `security` instead of the environment's. With a user, one token per user and
// cluster serves every read of the process (etcd keeps each token it hands out for minutes):
// a read authenticates only when it has none, or when etcd no longer knows it.
absl::StatusOr<std::vector<std::string>> ReadHaLeadersThroughGateway(absl::string_view url,
                                                                     absl::Duration timeout,
                                                                     EtcdSecurity security);

// The tokens the reads of this process asked etcd for so far (ReadHaLeadersThroughGateway with
// a user): one per user, password and cluster, and one more each time etcd forgot it.
uint64_t EtcdReadAuthentications();

// The same, for a client that waits for its leaders (an agent's wait_for_leader, `muster run`
// joining): while no etcd member answers yet (Unavailable) or no leader is registered yet
// (NotFound), asks again every 200 ms until `timeout` has passed. Without `wait`, one read.
// Possible errors: as ReadHaLeadersThroughGateway's, the last one.
absl::StatusOr<std::vector<std::string>> AwaitHaLeaders(absl::string_view url,
                                                        absl::Duration timeout, bool wait);

}  // namespace muster
