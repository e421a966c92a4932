// An etcd member through its JSON gateway (etcd 3.4's grpc-gateway on the client port, on by
// default: POST /v3/kv/range, /v3/kv/txn, /v3/lease/grant, /v3/lease/keepalive,
// /v3/lease/revoke): etcd's own request and reply messages in protobuf's JSON mapping (bytes in
// base64, 64-bit integers as strings, the proto's field names), over the HTTP client the
// library links already. The same API as over gRPC, without linking gRPC: what the Python
// package's HA leader uses, and EtcdOptions' default.
#pragma once

#include <memory>
#include <string>

#include "muster/net/ha/etcd/etcd_client.h"

namespace muster {

// A member at "HOST:PORT" (or "[IPv6]:PORT"). A call takes an idle keep-alive connection (up to
// 4 kept: calls come from several threads) or opens one; its reply is read up to 64 MiB and the
// call's deadline, checked as the body arrives (a member that stalls before its body is bounded
// by the socket's read timeout, the time left: a call may end up to that much late). etcd's
// errors come back as the gateway gives them (HTTP status and {"code", "message"}); no
// connection, no answer in time or a reply that is not etcd's are Unavailable.
// Over TLS (HTTPS) when `security` says so; with a token, as the Authorization header.
std::unique_ptr<EtcdMember> NewEtcdGatewayMember(const std::string& endpoint,
                                                 const EtcdSecurity& security);

}  // namespace muster
