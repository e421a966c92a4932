#include "muster/net/ha/etcd/etcd_client.h"

#include <algorithm>
#include <thread>
#include <utility>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/time/clock.h>

#include "muster/net/ha/etcd/etcd_gateway_member.h"

namespace muster {
namespace {

// Worth trying another member: this one is down, cut off, or has no quorum.
bool MemberFailed(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

}  // namespace

EtcdClient::EtcdClient(EtcdOptions options)
    : options_(std::move(options)), endpoints_text_(absl::StrJoin(options_.endpoints, ",")) {
  const EtcdMemberFactory& make = options_.member ? options_.member : NewEtcdGatewayMember;
  for (const std::string& endpoint : options_.endpoints) {
    members_.push_back(Member{.endpoint = endpoint, .call = make(endpoint)});
  }
}

absl::StatusOr<std::shared_ptr<EtcdClient>> EtcdClient::Connect(EtcdOptions options,
                                                                absl::Duration timeout) {
  if (options.endpoints.empty()) {
    return absl::InvalidArgumentError("no etcd endpoints given");
  }
  auto client = std::shared_ptr<EtcdClient>(new EtcdClient(std::move(options)));
  etcdserverpb::RangeRequest probe;
  probe.set_key("muster/");
  probe.set_limit(1);
  probe.set_serializable(true);  // any live member answers, with or without a quorum
  probe.set_count_only(true);
  absl::StatusOr<etcdserverpb::RangeResponse> answer = client->Range(probe, timeout);
  if (!answer.ok()) {
    return absl::UnavailableError(
        absl::StrCat("no etcd member answered at ", client->endpoints(), " within ",
                     absl::FormatDuration(timeout), " (", answer.status().message(),
                     "): start etcd there, or give the right --ha-etcd endpoints"));
  }
  return client;
}

absl::Status EtcdClient::OnSomeMember(absl::string_view what, absl::Duration timeout,
                                      EtcdMethod method, const google::protobuf::Message& request,
                                      google::protobuf::Message* response) const {
  const absl::Time deadline = absl::Now() + timeout;
  size_t index = current_.load();
  absl::Status last;
  std::string last_endpoint;
  for (size_t attempt = 0;; ++attempt) {
    const absl::Time now = absl::Now();
    if (now >= deadline && attempt > 0) break;
    const Member& member = members_[index % members_.size()];
    absl::Status status = member.call->Call(method, request, response,
                                            std::min(deadline, now + options_.attempt_timeout));
    if (!MemberFailed(status)) {
      current_.store(index % members_.size());
      if (status.ok()) return status;
      return absl::Status(status.code(), absl::StrCat("etcd ", what, " at ", member.endpoint, ": ",
                                                      status.message()));
    }
    last = status;
    last_endpoint = member.endpoint;
    ++index;
    // Every member failed at once (refused connections): wait a little before the next round.
    if ((attempt + 1) % members_.size() == 0) {
      absl::Duration pause = std::min(absl::Milliseconds(50), deadline - absl::Now());
      if (pause > absl::ZeroDuration())
        std::this_thread::sleep_for(absl::ToChronoNanoseconds(pause));
    }
  }
  return absl::UnavailableError(absl::StrCat(
      "no etcd member of ", endpoints_text_, " answered the ", what, " within ",
      absl::FormatDuration(timeout), " (last, ", last_endpoint, ": ", last.message(), ")"));
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(
    const etcdserverpb::RangeRequest& request, absl::Duration timeout) const {
  etcdserverpb::RangeResponse response;
  absl::Status status = OnSomeMember("range", timeout, EtcdMethod::kRange, request, &response);
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(const etcdserverpb::TxnRequest& request,
                                                          absl::Duration timeout) const {
  etcdserverpb::TxnResponse response;
  absl::Status status = OnSomeMember("transaction", timeout, EtcdMethod::kTxn, request, &response);
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<etcdserverpb::LeaseGrantResponse> EtcdClient::LeaseGrant(
    int64_t ttl_seconds, absl::Duration timeout) const {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_seconds);
  etcdserverpb::LeaseGrantResponse response;
  absl::Status status =
      OnSomeMember("lease grant", timeout, EtcdMethod::kLeaseGrant, request, &response);
  if (!status.ok()) return status;
  if (!response.error().empty()) {
    return absl::UnavailableError(absl::StrCat("etcd refused a lease: ", response.error()));
  }
  return response;
}

absl::StatusOr<int64_t> EtcdClient::LeaseKeepAliveOnce(int64_t id, absl::Duration timeout) const {
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(id);
  etcdserverpb::LeaseKeepAliveResponse response;
  absl::Status status =
      OnSomeMember("lease keep-alive", timeout, EtcdMethod::kLeaseKeepAlive, request, &response);
  if (!status.ok()) return status;
  if (response.ttl() <= 0) {
    return absl::NotFoundError(absl::StrCat("etcd lease ", absl::Hex(id), " is gone: it expired"));
  }
  return response.ttl();
}

absl::Status EtcdClient::LeaseRevoke(int64_t id, absl::Duration timeout) const {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(id);
  etcdserverpb::LeaseRevokeResponse response;
  return OnSomeMember("lease revoke", timeout, EtcdMethod::kLeaseRevoke, request, &response);
}

}  // namespace muster
