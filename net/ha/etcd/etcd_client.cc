#include "muster/net/ha/etcd/etcd_client.h"

#include <algorithm>
#include <thread>
#include <utility>

#include <absl/cleanup/cleanup.h>
#include <absl/strings/escaping.h>
#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/time/clock.h>

#include "muster/net/ha/etcd/etcd_gateway_member.h"

namespace muster {
namespace {

// Worth trying another member: this one is down, cut off, has no quorum, or (etcd's "too many
// requests") is behind.
bool MemberFailed(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
         (absl::IsResourceExhausted(status) &&
          absl::StrContains(status.message(), "too many requests"));
}

}  // namespace

EtcdClient::EtcdClient(EtcdOptions options)
    : options_(std::move(options)), endpoints_text_(absl::StrJoin(options_.endpoints, ",")) {
  const EtcdMemberFactory& make = options_.member ? options_.member : NewEtcdGatewayMember;
  for (const std::string& endpoint : options_.endpoints) {
    members_.push_back(Member{.endpoint = endpoint, .call = make(endpoint, options_.security)});
  }
}

absl::StatusOr<std::shared_ptr<EtcdClient>> EtcdClient::Connect(EtcdOptions options,
                                                                absl::Duration timeout) {
  if (options.endpoints.empty()) {
    return absl::InvalidArgumentError("no etcd endpoints given");
  }
  absl::StatusOr<EtcdSecurity> security = CheckEtcdSecurity(std::move(options.security));
  if (!security.ok()) return security.status();
  options.security = *std::move(security);
  auto client = std::shared_ptr<EtcdClient>(new EtcdClient(std::move(options)));
  // One deadline for the authentication and the probe.
  const absl::Time deadline = absl::Now() + timeout;
  auto left = [&] { return std::max(deadline - absl::Now(), absl::ZeroDuration()); };
  if (client->options_.security.auth()) {
    absl::StatusOr<std::string> token = client->Authenticate(timeout);
    if (!token.ok()) {
      if (!absl::IsUnavailable(token.status())) return token.status();
      return absl::UnavailableError(
          absl::StrCat("no etcd member answered at ", client->endpoints(), " within ",
                       absl::FormatDuration(timeout), " (", token.status().message(),
                       "): start etcd there, or give the right --ha-etcd endpoints"));
    }
  }
  etcdserverpb::RangeRequest probe;
  probe.set_key("muster/");
  probe.set_limit(1);
  probe.set_serializable(true);  // any live member answers, with or without a quorum
  probe.set_count_only(true);
  absl::StatusOr<etcdserverpb::RangeResponse> answer = client->Range(probe, left());
  if (!answer.ok() && absl::StrContains(answer.status().message(), "user name is empty")) {
    return EtcdUserRequiredError(client->endpoints());
  }
  // A user that may not read all of muster/ was still answered: the member is there.
  if (!answer.ok() && !absl::IsPermissionDenied(answer.status())) {
    return absl::UnavailableError(
        absl::StrCat("no etcd member answered at ", client->endpoints(), " within ",
                     absl::FormatDuration(timeout), " (", answer.status().message(),
                     "): start etcd there, or give the right --ha-etcd endpoints"));
  }
  return client;
}

std::string EtcdClient::token() const {
  absl::MutexLock lock(&token_mutex_);
  return token_;
}

absl::StatusOr<std::string> EtcdClient::Authenticate(absl::Duration timeout) const {
  etcdserverpb::AuthenticateRequest request;
  request.set_name(options_.security.user);
  request.set_password(options_.security.password);
  etcdserverpb::AuthenticateResponse response;
  absl::Status status = OnSomeMemberWith("authentication", timeout, EtcdMethod::kAuthenticate,
                                         request, &response, "");
  if (absl::IsFailedPrecondition(status) && absl::StrContains(status.message(), "not enabled")) {
    return absl::FailedPreconditionError(
        absl::StrCat(status.message(),
                     ": give no etcd user (unset MUSTER_ETCD_USER), or enable "
                     "etcd's authentication (etcdctl auth enable)"));
  }
  // etcd's answer to a user or password it does not know (not a file of ours that does not load).
  if ((absl::IsInvalidArgument(status) || absl::IsUnauthenticated(status)) &&
      absl::StrContains(status.message(), "authentication failed")) {
    return EtcdUserRefusedError(options_.security.user, status.message());
  }
  if (!status.ok()) return status;
  if (absl::Status token = CheckEtcdToken(response.token()); !token.ok()) return token;
  authentications_.fetch_add(1);
  absl::MutexLock lock(&token_mutex_);
  token_ = response.token();
  return token_;
}

absl::Status EtcdClient::OnSomeMember(absl::string_view what, absl::Duration timeout,
                                      EtcdMethod method, const google::protobuf::Message& request,
                                      google::protobuf::Message* response) const {
  if (!options_.security.auth()) {
    return OnSomeMemberWith(what, timeout, method, request, response, "");
  }
  const absl::Time deadline = absl::Now() + timeout;
  auto left = [&] { return std::max(deadline - absl::Now(), absl::ZeroDuration()); };
  std::string token = this->token();
  if (token.empty()) {
    absl::StatusOr<std::string> fresh = Authenticate(timeout);
    if (!fresh.ok()) return fresh.status();
    token = *std::move(fresh);
  }
  absl::Status status = OnSomeMemberWith(what, left(), method, request, response, token);
  // etcd's answer to a token it no longer knows (expired, or a member restarted): Unauthenticated
  // ("invalid auth token"); and to one from before a change of its users ("revision of auth
  // store is old").
  if (!absl::IsUnauthenticated(status) &&
      !absl::StrContains(status.message(), "revision of auth store is old")) {
    return status;
  }
  if (left() <= absl::ZeroDuration()) return status;
  std::string current;
  bool renews = false;
  {
    // Renewed once for the calls refused together: one renews, the others wait for it (each
    // until its own deadline) and find it renewed.
    absl::MutexLock lock(&token_mutex_);
    if (!token_mutex_.AwaitWithDeadline(absl::Condition(
                                            +[](bool* renewing) { return !*renewing; }, &renewing_),
                                        deadline)) {
      return absl::DeadlineExceededError(absl::StrCat(
          "etcd ", what, ": no time left while the token of user \"",
          absl::CHexEscape(options_.security.user), "\" was renewed for another call"));
    }
    if (token_ != token) {
      current = token_;
    } else {
      renewing_ = renews = true;
    }
  }
  if (renews) {
    absl::Cleanup done = [this] {
      absl::MutexLock lock(&token_mutex_);
      renewing_ = false;
    };
    absl::StatusOr<std::string> fresh = Authenticate(left());
    if (!fresh.ok()) return fresh.status();
    current = *std::move(fresh);
  }
  if (left() <= absl::ZeroDuration()) {
    return absl::DeadlineExceededError(
        absl::StrCat("etcd ", what, ": no time left after renewing the token of user \"",
                     absl::CHexEscape(options_.security.user), "\""));
  }
  return OnSomeMemberWith(what, left(), method, request, response, current);
}

absl::Status EtcdClient::OnSomeMemberWith(absl::string_view what, absl::Duration timeout,
                                          EtcdMethod method,
                                          const google::protobuf::Message& request,
                                          google::protobuf::Message* response,
                                          const std::string& token) const {
  const absl::Time deadline = absl::Now() + timeout;
  size_t index = current_.load();
  absl::Status last;
  std::string last_endpoint;
  for (size_t attempt = 0;; ++attempt) {
    const absl::Time now = absl::Now();
    if (now >= deadline && attempt > 0) break;
    const Member& member = members_[index % members_.size()];
    absl::Status status = member.call->Call(
        method, request, response, std::min(deadline, now + options_.attempt_timeout), token);
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
