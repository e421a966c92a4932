// A client of etcd's v3 API (the KV and Lease services of etcd's rpc.proto) for a cluster given
// by its members' endpoints. A call goes to one member; when that member does not answer (down,
// cut off, without a quorum: Unavailable or DeadlineExceeded) it tries the next, until the
// call's time is up. Requests and replies are etcd's own protobuf messages, carried to a member
// by an EtcdMember: over gRPC (etcd_grpc_member.h, in muster_ha_grpc: what `muster serve` uses)
// or through etcd's JSON gateway (etcd_gateway_member.h, without gRPC: the default, and what the
// Python package uses). Blocking: for threads of their own (the state writer, a leader's
// campaign), never for an actor's handler. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <absl/base/thread_annotations.h>
#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>
#include <absl/synchronization/mutex.h>
#include <absl/time/time.h>
#include <google/protobuf/message.h>

#include "etcd/etcdserver/etcdserverpb/rpc.pb.h"
#include "muster/net/agent/session/etcd/etcd_security.h"
#include "muster/net/agent/session/etcd/ha_leader_registry.h"  // ParseEtcdEndpoints

namespace muster {

// The calls of etcd's API the client makes.
enum class EtcdMethod { kRange, kTxn, kLeaseGrant, kLeaseKeepAlive, kLeaseRevoke, kAuthenticate };

// One member of the cluster, reached over one protocol.
class EtcdMember {
 public:
  virtual ~EtcdMember() = default;
  // Calls `method` with `request` (etcd's request message of that method; LeaseKeepAlive: one
  // request, one answer) and fills `response` (cleared first), before `deadline`. Unavailable or
  // DeadlineExceeded: the member did not answer (down, cut off, no quorum), and the client tries
  // another; any other error is etcd's answer, with its code and message. `token`, when not
  // empty, is etcd's authentication token for the call (Authenticate's). Thread-safe.
  virtual absl::Status Call(EtcdMethod method, const google::protobuf::Message& request,
                            google::protobuf::Message* response, absl::Time deadline,
                            const std::string& token) const = 0;
};

// Makes the member at "HOST:PORT", reached over TLS when `security` says so (checked by
// CheckEtcdSecurity).
using EtcdMemberFactory = std::function<std::unique_ptr<EtcdMember>(const std::string& endpoint,
                                                                    const EtcdSecurity& security)>;

struct EtcdOptions {
  // "HOST:PORT" (or "http://HOST:PORT") of each member.
  std::vector<std::string> endpoints;
  // How long one member may take to answer one call before the next is tried.
  absl::Duration attempt_timeout = absl::Milliseconds(500);
  // How a member is reached: empty, through etcd's JSON gateway (NewEtcdGatewayMember).
  EtcdMemberFactory member;
  // TLS and etcd's user (ha_leader_registry.h); TLS also when the endpoints were https://
  // (ParseEtcdEndpoints strips it: set `security.tls`, as CheckEtcdSecurity does).
  EtcdSecurity security;
};

class EtcdClient {
 public:
  // Connects to the cluster and checks that a member answers within `timeout` (a serializable
  // read; with a user, it first authenticates). Possible errors: InvalidArgument (no endpoints;
  // a file of `security` cannot be read; etcd refused the user or its password), Unavailable
  // (no member answered, naming the endpoints and the last error), FailedPrecondition (a user
  // given, but etcd's authentication is off), Unauthenticated (etcd's authentication is on, and
  // no user is given).
  static absl::StatusOr<std::shared_ptr<EtcdClient>> Connect(
      EtcdOptions options, absl::Duration timeout = absl::Seconds(5));

  // Each call returns etcd's reply, or its error as an absl::Status of the same code naming the
  // member and etcd's message (Unavailable when no member answered within `timeout`).
  absl::StatusOr<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& request,
                                                    absl::Duration timeout) const;
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& request,
                                                absl::Duration timeout) const;
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> LeaseGrant(int64_t ttl_seconds,
                                                              absl::Duration timeout) const;
  // Refreshes lease `id` once. Returns the TTL etcd gave it (seconds); NotFound when the lease
  // is gone (it expired, or was revoked).
  absl::StatusOr<int64_t> LeaseKeepAliveOnce(int64_t id, absl::Duration timeout) const;
  absl::Status LeaseRevoke(int64_t id, absl::Duration timeout) const;

  // How many times the client authenticated (a user's token asked for): for tests.
  int authentications() const { return authentications_.load(); }

  // "HOST:PORT,HOST:PORT", for messages.
  const std::string& endpoints() const { return endpoints_text_; }

 private:
  struct Member {
    std::string endpoint;
    std::unique_ptr<EtcdMember> call;
  };

  explicit EtcdClient(EtcdOptions options);

  // Calls `method` on the members in turn, from the one that answered last, until one answers
  // or `timeout` passes; etcd's errors name `what` and the member. With a user, a call that etcd
  // refuses for its token (expired: etcd's simple tokens last 5 minutes unused) authenticates
  // again and is made once more.
  absl::Status OnSomeMember(absl::string_view what, absl::Duration timeout, EtcdMethod method,
                            const google::protobuf::Message& request,
                            google::protobuf::Message* response) const;
  absl::Status OnSomeMemberWith(absl::string_view what, absl::Duration timeout, EtcdMethod method,
                                const google::protobuf::Message& request,
                                google::protobuf::Message* response,
                                const std::string& token) const;
  // A new token for the user (Authenticate), kept for the next calls. Possible errors:
  // InvalidArgument (user or password refused), FailedPrecondition (authentication off),
  // Unavailable.
  absl::StatusOr<std::string> Authenticate(absl::Duration timeout) const;
  std::string token() const;

  EtcdOptions options_;
  std::string endpoints_text_;
  std::vector<Member> members_;
  mutable std::atomic<size_t> current_{0};  // the member that answered last
  mutable std::atomic<int> authentications_{0};
  mutable absl::Mutex token_mutex_;
  mutable std::string token_ ABSL_GUARDED_BY(token_mutex_);
  // True while a call renews a refused token (a blocking call: the client's callers are threads
  // of their own, never actors); the calls refused meanwhile wait for it, each until its own
  // deadline.
  mutable bool renewing_ ABSL_GUARDED_BY(token_mutex_) = false;
};

}  // namespace muster
