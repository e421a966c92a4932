#include "muster/net/transport/wire/tcp_dial.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include <absl/strings/str_cat.h>
#include <caf/io/network/interfaces.hpp>
#include <caf/io/network/protocol.hpp>
#include <caf/optional.hpp>
#include <caf/sec.hpp>

namespace muster {
namespace {

namespace net = caf::io::network;
using Clock = std::chrono::steady_clock;

// What Connect returns when `deadline` passed first (connect(2)'s own errors are positive).
constexpr int kDeadlinePassed = -1;

// Connects `fd` to `address` (numeric), waiting until `deadline` at most. Returns 0, the errno
// that ended it, or kDeadlinePassed.
int Connect(int fd, const std::string& address, uint16_t port, Clock::time_point deadline) {
  sockaddr_storage storage;
  if (!NumericAddress(address, port, &storage)) return EINVAL;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&storage), LengthOf(storage)) == 0) {
    return 0;
  }
  if (errno != EINPROGRESS) return errno;
  for (;;) {
    // Past the deadline the socket is still looked at once (a thread descheduled until then
    // may find it connected).
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    int wait_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60'000));
    pollfd waiting{.fd = fd, .events = POLLOUT, .revents = 0};
    int ready = ::poll(&waiting, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return errno;
    if (ready == 0 && wait_ms == 0) return kDeadlinePassed;
    if (ready == 0) continue;
    int error = 0;
    socklen_t size = sizeof(error);
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) return errno;
    return error;
  }
}

// One address family's try: a socket, or what failed; `resolved` false when `host` has no
// address of that family.
struct Attempt {
  net::native_socket fd = net::invalid_native_socket;
  bool resolved = true;
  std::string error;
};

Attempt Dial(const std::string& host, uint16_t port,
             caf::optional<net::protocol::network> preferred, std::chrono::milliseconds timeout) {
  auto address = net::interfaces::native_address(host, preferred);
  if (!address) return Attempt{.resolved = false, .error = "no such host"};
  const Clock::time_point deadline = Clock::now() + timeout;
  const bool ipv6 = address->second == net::protocol::ipv6;
  Attempt failed;
  int fd = ::socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    failed.error = absl::StrCat("socket: ", std::strerror(errno));
  } else {
    int error = Connect(fd, address->first, port, deadline);
    if (error == 0) return Attempt{.fd = fd};
    ::close(fd);
    failed.error = error == kDeadlinePassed
                       ? absl::StrCat("no answer to the connect within ", timeout.count(), " ms")
                       : absl::StrCat("connect: ", std::strerror(error));
  }
  if (!ipv6) return failed;
  // As CAF does: an IPv6 address that fails is tried over IPv4, with a time of its own (a host
  // whose IPv6 path drops packets is still reached). A host without one keeps the IPv6 error.
  Attempt fallback = Dial(host, port, net::protocol::ipv4, timeout);
  return fallback.resolved ? fallback : failed;
}

}  // namespace

bool NumericAddress(const std::string& host, uint16_t port, sockaddr_storage* out) {
  *out = {};
  auto* v4 = reinterpret_cast<sockaddr_in*>(out);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(out);
  if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    return true;
  }
  return false;
}

socklen_t LengthOf(const sockaddr_storage& address) {
  return address.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

void KeepTcpAlive(net::native_socket fd) {
  int on = 1, idle = 30, interval = 10, count = 3;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

caf::expected<net::native_socket> DialTcp(const std::string& host, uint16_t port,
                                          std::chrono::milliseconds timeout) {
  Attempt attempt = Dial(host, port, caf::none, timeout);
  if (attempt.fd != net::invalid_native_socket) return attempt.fd;
  return caf::make_error(caf::sec::cannot_connect_to_node, attempt.error, host, port);
}

}  // namespace muster
