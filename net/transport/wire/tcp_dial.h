// The outbound TCP connect of a node: CAF's middleman actor calls it (through
// GuardedMultiplexer::new_tcp_scribe) for every remote_actor to a new address, and waits in it.
// CAF 0.17 connects with a blocking connect(2), which waits for as long as the kernel retries
// the SYN (about two minutes) when the peer's host is cut off: every other connect of the
// process waits behind it, and so does every actor of a scheduler thread it runs on. DialTcp
// resolves the host as CAF does (the first address getaddrinfo gives; IPv6 falls back to IPv4)
// and connects without blocking, waiting at most `timeout` for the handshake.
//
//   resolve --address--> connect (non-blocking) --done at once--> socket
//      |                     |--in progress--> poll(POLLOUT, time left) --connected--> socket
//      \--none--> error      |                        \--error or time up--> error
//                            \--error--> error         (IPv6: both retried over IPv4)
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/expected.hpp>
#include <caf/io/network/native_socket.hpp>

namespace muster {

// A connected, non-blocking, close-on-exec socket to HOST:PORT, or caf::sec::cannot_connect_to_node
// with what failed ("no such host", connect(2)'s error, or the time it waited in vain).
caf::expected<caf::io::network::native_socket> DialTcp(const std::string& host, uint16_t port,
                                                       std::chrono::milliseconds timeout);

}  // namespace muster
