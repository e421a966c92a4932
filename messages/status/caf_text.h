// Plain words for what CAF reports: its errors and exit reasons, and the nodes of peers.
//
// CAF renders an error as "system_error(request_timeout)" and a node as a 40-digit host hash
// and a pid; neither means anything to the person who reads a Muster message. These helpers
// say what happened and name a peer process by host and pid.
#pragma once

#include <string>

#include <caf/error.hpp>
#include <caf/node_id.hpp>

namespace muster {

// What `error` means, in a few words: "the request timed out", "the connection to the peer
// closed". Errors of the status category (status_codec.h) give their message. Empty for no
// error.
std::string DescribeCafError(const caf::error& error);

// Remembers that the peer `node` connects from `host` (the address of its connection), for
// PeerName. Safe from any thread.
void RememberPeerHost(const caf::node_id& node, const std::string& host);

// "host 10.0.0.5 pid 4242" when the address of the node's connection is known, "pid 4242 (address
// unknown)" otherwise; "an unknown node" for an invalid id.
std::string PeerName(const caf::node_id& node);

}  // namespace muster
