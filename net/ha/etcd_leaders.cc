#include "muster/net/ha/etcd_leaders.h"

#include <algorithm>
#include <utility>

#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>

#include "muster/net/ha/etcd_election.h"

namespace muster {

absl::StatusOr<EtcdLeaderUrl> ParseEtcdLeaderUrl(absl::string_view text) {
  auto form = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not etcd://HOST:PORT[,HOST:PORT...]/NAME (etcd's members, ",
                     "then the HA name the leaders were started with: --ha-name)"));
  };
  if (!absl::StartsWith(text, kEtcdLeaderScheme)) return form();
  absl::string_view rest = text.substr(kEtcdLeaderScheme.size());
  const size_t slash = rest.rfind('/');
  if (slash == absl::string_view::npos || slash == 0 || slash + 1 == rest.size()) return form();
  EtcdLeaderUrl url;
  absl::StatusOr<std::vector<std::string>> endpoints = ParseEtcdEndpoints(rest.substr(0, slash));
  if (!endpoints.ok()) return endpoints.status();
  url.endpoints = *std::move(endpoints);
  url.name = std::string(rest.substr(slash + 1));
  if (absl::Status name = CheckHaName(url.name); !name.ok()) return name;
  return url;
}

absl::StatusOr<std::vector<std::string>> ReadHaLeaders(EtcdClient& etcd, const std::string& name,
                                                       absl::Duration timeout) {
  etcdserverpb::TxnRequest txn;  // both at one revision
  const std::string prefix = HaLeadersPrefix(name);
  auto* all = txn.add_success()->mutable_request_range();
  all->set_key(prefix);
  all->set_range_end(PrefixEnd(prefix));
  all->set_limit(64);
  txn.add_success()->mutable_request_range()->set_key(HaLeaderKey(name));
  absl::StatusOr<etcdserverpb::TxnResponse> done = etcd.Txn(txn, timeout);
  if (!done.ok()) return done.status();
  std::vector<std::string> leaders;
  for (const auto& kv : done->responses(0).response_range().kvs()) leaders.push_back(kv.value());
  std::sort(leaders.begin(), leaders.end());
  const auto& active = done->responses(1).response_range();
  if (active.kvs_size() == 1) {
    const std::string& holder = active.kvs(0).value();
    leaders.erase(std::remove(leaders.begin(), leaders.end(), holder), leaders.end());
    leaders.insert(leaders.begin(), holder);
  }
  if (leaders.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no leader of HA job ", name, " is registered in etcd at ", etcd.endpoints(),
                     ": start one (muster serve --ha-etcd ", etcd.endpoints(), " --ha-name ", name,
                     "), or check the name"));
  }
  return leaders;
}

absl::StatusOr<std::vector<std::string>> ResolveEtcdLeaders(absl::string_view url,
                                                            absl::Duration timeout) {
  absl::StatusOr<EtcdLeaderUrl> parsed = ParseEtcdLeaderUrl(url);
  if (!parsed.ok()) return parsed.status();
  const absl::Time deadline = absl::Now() + timeout;
  absl::StatusOr<std::shared_ptr<EtcdClient>> etcd =
      EtcdClient::Connect({.endpoints = parsed->endpoints}, timeout);
  if (!etcd.ok()) {
    return absl::Status(etcd.status().code(), absl::StrCat("cannot read the leaders of ", url, ": ",
                                                           etcd.status().message()));
  }
  return ReadHaLeaders(**etcd, parsed->name,
                       std::max(deadline - absl::Now(), absl::Milliseconds(100)));
}

}  // namespace muster
