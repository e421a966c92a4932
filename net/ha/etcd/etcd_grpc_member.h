// An etcd member over gRPC (etcd's rpc.proto stubs, generated at build time): what `muster serve`
// uses. In the library muster_ha_grpc, so that what reaches etcd otherwise (the Python package,
// through etcd_gateway_member.h) links no gRPC.
#pragma once

#include <memory>
#include <string>

#include "muster/net/ha/etcd/etcd_client.h"

namespace muster {

// A member at "HOST:PORT" over a gRPC channel of its own (TLS when `security` says so). A member
// that comes back is found again within a second; a call waits for the member's connection
// until its deadline.
std::unique_ptr<EtcdMember> NewEtcdGrpcMember(const std::string& endpoint,
                                              const EtcdSecurity& security);

}  // namespace muster
