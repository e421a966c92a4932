// The outbound TCP connect of a node: CAF's middleman actor calls it (through
// GuardedMultiplexer::new_tcp_scribe) for every remote_actor to a new address, and waits in it.
// CAF 0.17 connects with a blocking connect(2), which waits for as long as the kernel retries
// the SYN (about two minutes) when the peer's host is cut off, and every other connect of the
// process waits behind it. DialTcp resolves the host as CAF does (getaddrinfo, blocking as
// CAF's: a name server that does not answer still costs its own timeouts; the first address;
// IPv6 falls back to IPv4) and connects without blocking, waiting at most `timeout` for the
// handshake (twice that for an IPv6 address that fails and its IPv4 fallback).
//
//   resolve --address--> connect (non-blocking) --done at once--> socket
//      |                     |--in progress--> poll(POLLOUT, time left) --connected--> socket
//      \--none--> error      |                        \--error or time up--> error
//                            \--error--> error         (IPv6: either retried over IPv4)
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <sys/socket.h>

#include <caf/expected.hpp>
#include <caf/io/network/native_socket.hpp>

namespace muster {

// The socket address of a numeric host (IPv4 or IPv6) and `port`; false for a name.
bool NumericAddress(const std::string& host, uint16_t port, sockaddr_storage* out);
// The length connect(2) takes for `address`.
socklen_t LengthOf(const sockaddr_storage& address);

// A connected, non-blocking, close-on-exec socket to HOST:PORT, or caf::sec::cannot_connect_to_node
// with what failed: "no such host", "connect: <connect(2)'s error>", or "no answer to the
// connect within <timeout> ms".
// A direct-call connection's options (either end): no Nagle delay, and keep-alive probes after
// 30 s idle, every 10 s, 3 times, so that a connection whose peer's host vanished or that a
// middlebox dropped ends within about a minute instead of leaving a waiting call waiting.
void KeepTcpAlive(caf::io::network::native_socket fd);

caf::expected<caf::io::network::native_socket> DialTcp(const std::string& host, uint16_t port,
                                                       std::chrono::milliseconds timeout);

}  // namespace muster
