#include "muster/net/ha/etcd_client.h"

#include <thread>
#include <utility>

#include <absl/strings/ascii.h>
#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

namespace muster {
namespace {

// gRPC's codes are the canonical ones, as absl's are.
absl::Status FromGrpc(const grpc::Status& status, absl::string_view what,
                      absl::string_view endpoint) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat("etcd ", what, " at ", endpoint, ": ", status.error_message()));
}

// Worth trying another member: this one is down, cut off, or has no quorum.
bool MemberFailed(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

std::shared_ptr<grpc::Channel> ChannelTo(const std::string& endpoint) {
  grpc::ChannelArguments args;
  // A member that comes back is found again within a second, not gRPC's default two minutes.
  // (The minimum connect timeout stays gRPC's: a member that is still joining its cluster
  // accepts connections but answers only once it serves, and shorter connects never get
  // through then.)
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A page of a large state is larger than gRPC's default 4 MiB: etcd bounds what it sends.
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

EtcdClient::EtcdClient(EtcdOptions options)
    : options_(std::move(options)), endpoints_text_(absl::StrJoin(options_.endpoints, ",")) {
  for (const std::string& endpoint : options_.endpoints) {
    auto channel = ChannelTo(endpoint);
    members_.push_back(Member{.endpoint = endpoint,
                              .kv = etcdserverpb::KV::NewStub(channel),
                              .lease = etcdserverpb::Lease::NewStub(channel)});
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

template <class Call>
absl::Status EtcdClient::OnSomeMember(absl::string_view what, absl::Duration timeout,
                                      Call call) const {
  const absl::Time deadline = absl::Now() + timeout;
  size_t index = current_.load();
  grpc::Status last;
  std::string last_endpoint;
  for (size_t attempt = 0;; ++attempt) {
    const absl::Time now = absl::Now();
    if (now >= deadline && attempt > 0) break;
    const Member& member = members_[index % members_.size()];
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(std::min(deadline, now + options_.attempt_timeout)));
    // Waits for the member's connection (and drives it: gRPC's synchronous calls make progress
    // on connections only while a call waits) instead of failing at once while it reconnects.
    context.set_wait_for_ready(true);
    grpc::Status status = call(member, &context);
    if (!MemberFailed(status)) {
      current_.store(index % members_.size());
      return FromGrpc(status, what, member.endpoint);
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
      absl::FormatDuration(timeout), " (last, ", last_endpoint, ": ", last.error_message(), ")"));
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(
    const etcdserverpb::RangeRequest& request, absl::Duration timeout) const {
  etcdserverpb::RangeResponse response;
  absl::Status status = OnSomeMember("range", timeout, [&](const Member& m, auto* context) {
    return m.kv->Range(context, request, &response);
  });
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(const etcdserverpb::TxnRequest& request,
                                                          absl::Duration timeout) const {
  etcdserverpb::TxnResponse response;
  absl::Status status = OnSomeMember("transaction", timeout, [&](const Member& m, auto* context) {
    return m.kv->Txn(context, request, &response);
  });
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<etcdserverpb::LeaseGrantResponse> EtcdClient::LeaseGrant(
    int64_t ttl_seconds, absl::Duration timeout) const {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_seconds);
  etcdserverpb::LeaseGrantResponse response;
  absl::Status status = OnSomeMember("lease grant", timeout, [&](const Member& m, auto* context) {
    return m.lease->LeaseGrant(context, request, &response);
  });
  if (!status.ok()) return status;
  if (!response.error().empty()) {
    return absl::UnavailableError(absl::StrCat("etcd refused a lease: ", response.error()));
  }
  return response;
}

absl::StatusOr<int64_t> EtcdClient::LeaseKeepAliveOnce(int64_t id, absl::Duration timeout) const {
  etcdserverpb::LeaseKeepAliveResponse response;
  absl::Status status =
      OnSomeMember("lease keep-alive", timeout, [&](const Member& m, grpc::ClientContext* context) {
        auto stream = m.lease->LeaseKeepAlive(context);
        etcdserverpb::LeaseKeepAliveRequest request;
        request.set_id(id);
        if (!stream->Write(request) || !stream->Read(&response)) {
          stream->WritesDone();
          grpc::Status finished = stream->Finish();
          return finished.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream closed")
                               : finished;
        }
        stream->WritesDone();
        context->TryCancel();  // one answer is all this call wants
        (void)stream->Finish();
        return grpc::Status::OK;
      });
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
  return OnSomeMember("lease revoke", timeout, [&](const Member& m, auto* context) {
    return m.lease->LeaseRevoke(context, request, &response);
  });
}

}  // namespace muster
