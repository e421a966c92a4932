#include "muster/net/ha/etcd/etcd_grpc_member.h"

#include <utility>

#include <absl/strings/str_cat.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace muster {
namespace {

// gRPC's codes are the canonical ones, as absl's are.
absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// TLS credentials of `security` (its files were checked by CheckEtcdSecurity). A file that
// cannot be read now is `*unreadable`: never the system's CAs in place of the one named.
std::shared_ptr<grpc::ChannelCredentials> CredentialsOf(const EtcdSecurity& security,
                                                        absl::Status* unreadable) {
  if (!security.tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions tls;
  auto read = [&](const std::string& path, const char* what) {
    if (path.empty()) return std::string();
    absl::StatusOr<std::string> contents = ReadEtcdSecurityFile(path, what);
    if (!contents.ok()) {
      *unreadable = contents.status();
      return std::string();
    }
    return *std::move(contents);
  };
  // No CA named: gRPC's default roots (the system's).
  tls.pem_root_certs = read(security.ca_file, "etcd's CA (MUSTER_ETCD_CACERT)");
  tls.pem_cert_chain = read(security.cert_file, "etcd's client certificate (MUSTER_ETCD_CERT)");
  tls.pem_private_key = read(security.key_file, "etcd's client key (MUSTER_ETCD_KEY)");
  if (!unreadable->ok()) return grpc::InsecureChannelCredentials();  // never used: Call fails
  return grpc::SslCredentials(tls);
}

std::shared_ptr<grpc::Channel> ChannelTo(
    const std::string& endpoint, const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments args;
  // A member that comes back is found again within a second, not gRPC's default two minutes.
  // (The minimum connect timeout stays gRPC's: a member that is still joining its cluster
  // accepts connections but answers only once it serves, and shorter connects never get
  // through then.)
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A page of a large state is larger than gRPC's default 4 MiB: etcd bounds what it sends.
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(endpoint, credentials, args);
}

class GrpcMember : public EtcdMember {
 public:
  GrpcMember(const std::string& endpoint, const EtcdSecurity& security)
      : channel_(ChannelTo(endpoint, CredentialsOf(security, &unreadable_))) {}

  absl::Status Call(EtcdMethod method, const google::protobuf::Message& request,
                    google::protobuf::Message* response, absl::Time deadline,
                    const std::string& token) const override {
    response->Clear();
    if (!unreadable_.ok()) return unreadable_;  // InvalidArgument: the client tries no other
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    if (!token.empty()) context.AddMetadata("token", token);  // etcd's metadata key
    // Waits for the member's connection (and drives it: gRPC's synchronous calls make progress
    // on connections only while a call waits) instead of failing at once while it reconnects.
    context.set_wait_for_ready(true);
    switch (method) {
      case EtcdMethod::kRange:
        return FromGrpc(kv_->Range(&context, As<etcdserverpb::RangeRequest>(request),
                                   As<etcdserverpb::RangeResponse>(response)));
      case EtcdMethod::kTxn:
        return FromGrpc(kv_->Txn(&context, As<etcdserverpb::TxnRequest>(request),
                                 As<etcdserverpb::TxnResponse>(response)));
      case EtcdMethod::kLeaseGrant:
        return FromGrpc(lease_->LeaseGrant(&context, As<etcdserverpb::LeaseGrantRequest>(request),
                                           As<etcdserverpb::LeaseGrantResponse>(response)));
      case EtcdMethod::kLeaseRevoke:
        return FromGrpc(lease_->LeaseRevoke(&context, As<etcdserverpb::LeaseRevokeRequest>(request),
                                            As<etcdserverpb::LeaseRevokeResponse>(response)));
      case EtcdMethod::kLeaseKeepAlive:
        return KeepAliveOnce(&context, As<etcdserverpb::LeaseKeepAliveRequest>(request),
                             As<etcdserverpb::LeaseKeepAliveResponse>(response));
      case EtcdMethod::kAuthenticate:
        return FromGrpc(auth_->Authenticate(&context,
                                            As<etcdserverpb::AuthenticateRequest>(request),
                                            As<etcdserverpb::AuthenticateResponse>(response)));
    }
    return absl::InvalidArgumentError("unknown etcd method");
  }

 private:
  template <class T>
  static const T& As(const google::protobuf::Message& message) {
    return static_cast<const T&>(message);
  }
  template <class T>
  static T* As(google::protobuf::Message* message) {
    return static_cast<T*>(message);
  }

  // LeaseKeepAlive is a stream: one request, one answer.
  absl::Status KeepAliveOnce(grpc::ClientContext* context,
                             const etcdserverpb::LeaseKeepAliveRequest& request,
                             etcdserverpb::LeaseKeepAliveResponse* response) const {
    auto stream = lease_->LeaseKeepAlive(context);
    if (!stream->Write(request) || !stream->Read(response)) {
      stream->WritesDone();
      grpc::Status finished = stream->Finish();
      return finished.ok() ? absl::UnavailableError("stream closed") : FromGrpc(finished);
    }
    stream->WritesDone();
    context->TryCancel();  // one answer is all this call wants
    (void)stream->Finish();
    return absl::OkStatus();
  }

  absl::Status unreadable_;  // set before channel_, by its initialiser
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_ = etcdserverpb::KV::NewStub(channel_);
  std::unique_ptr<etcdserverpb::Lease::Stub> lease_ = etcdserverpb::Lease::NewStub(channel_);
  std::unique_ptr<etcdserverpb::Auth::Stub> auth_ = etcdserverpb::Auth::NewStub(channel_);
};

}  // namespace

std::unique_ptr<EtcdMember> NewEtcdGrpcMember(const std::string& endpoint,
                                              const EtcdSecurity& security) {
  return std::make_unique<GrpcMember>(endpoint, security);
}

}  // namespace muster
