// One POST of JSON to an etcd member's JSON gateway (etcd 3.4's grpc-gateway on its client port),
// with the HTTP client the library links (cpp-httplib): what the leader registry
// (ha_leader_registry.h) and an HA leader's gateway member (net/ha/etcd/etcd_gateway_member.h)
// send. The reply is read up to a size and a deadline, both checked as its body arrives.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include <absl/status/statusor.h>
#include <absl/time/time.h>

#include "muster/net/agent/session/etcd/etcd_security.h"
#include "muster/net/observe/httplib.h"

namespace muster {

struct GatewayReply {
  int status = 0;  // HTTP status
  std::string body;
};

// "HOST:PORT" or "[IPv6]:PORT" -> the host (without brackets) and port an httplib client takes.
std::pair<std::string, int> GatewayHostPort(const std::string& endpoint);

// A client of the member at `endpoint`, keeping its connection between requests, without
// decompressing replies, with TCP_NODELAY; over TLS when `security` says so (checked by
// CheckEtcdSecurity), with its certificate and key when it names them.
std::unique_ptr<httplib::ClientImpl> NewGatewayClient(const std::string& endpoint,
                                                      const EtcdSecurity& security);

// POSTs `body` to `path` through `client`, its timeouts set to what is left until `deadline`.
// An error reply whose trailer (Grpc-Trailer-Content-Type) the client cannot read is whole.
// Possible errors: Unavailable (no connection or no whole reply; a reply over `max_bytes`,
// saying so), DeadlineExceeded (the reply not whole by `deadline`). After an error the client's
// connection is not to be used again.
// `token`, when not empty, is etcd's authentication token (EtcdGatewayAuthenticate).
// Also InvalidArgument: the client's certificate and key did not load.
absl::StatusOr<GatewayReply> PostToGateway(httplib::ClientImpl& client, const char* path,
                                           const std::string& body, absl::Time deadline,
                                           size_t max_bytes, const std::string& token = "");

// Asks the member behind `client` for a token of `security`'s user (POST /v3/auth/authenticate).
// Possible errors: as PostToGateway's; InvalidArgument (etcd refused the user or the password,
// naming the user), FailedPrecondition (etcd's authentication is not enabled, or the member is
// not etcd's gateway).
absl::StatusOr<std::string> EtcdGatewayAuthenticate(httplib::ClientImpl& client,
                                                    const EtcdSecurity& security,
                                                    absl::Time deadline);

}  // namespace muster
