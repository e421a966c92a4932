#include "muster/net/transport/wire/tcp_dial.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <absl/strings/str_cat.h>
#include <caf/io/network/interfaces.hpp>
#include <caf/io/network/protocol.hpp>
#include <caf/optional.hpp>
#include <caf/sec.hpp>

namespace muster {
namespace {

namespace net = caf::io::network;
using Clock = std::chrono::steady_clock;

caf::error Failed(const std::string& what, const std::string& host, uint16_t port) {
  return caf::make_error(caf::sec::cannot_connect_to_node, what, host, port);
}

// Connects `fd` to `address` (numeric) of `family`, waiting until `deadline` at most. Returns 0
// or the errno that ended it (ETIMEDOUT when the deadline passed first).
int Connect(int fd, int family, const std::string& address, uint16_t port,
            Clock::time_point deadline) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (family == AF_INET6) {
    auto* sa = reinterpret_cast<sockaddr_in6*>(&storage);
    sa->sin6_family = AF_INET6;
    sa->sin6_port = htons(port);
    if (::inet_pton(AF_INET6, address.c_str(), &sa->sin6_addr) != 1) return EINVAL;
    length = sizeof(sockaddr_in6);
  } else {
    auto* sa = reinterpret_cast<sockaddr_in*>(&storage);
    sa->sin_family = AF_INET;
    sa->sin_port = htons(port);
    if (::inet_pton(AF_INET, address.c_str(), &sa->sin_addr) != 1) return EINVAL;
    length = sizeof(sockaddr_in);
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&storage), length) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return ETIMEDOUT;
    pollfd waiting{.fd = fd, .events = POLLOUT, .revents = 0};
    int ready = ::poll(&waiting, 1, static_cast<int>(std::min<int64_t>(left.count(), 60'000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return errno;
    if (ready == 0) continue;  // the loop checks the deadline
    int error = 0;
    socklen_t size = sizeof(error);
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) return errno;
    return error;
  }
}

caf::expected<net::native_socket> Dial(const std::string& host, uint16_t port,
                                       caf::optional<net::protocol::network> preferred,
                                       std::chrono::milliseconds timeout,
                                       Clock::time_point deadline) {
  auto address = net::interfaces::native_address(host, preferred);
  if (!address) return Failed("no such host", host, port);
  const bool ipv6 = address->second == net::protocol::ipv6;
  int fd = ::socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Failed(absl::StrCat("socket: ", std::strerror(errno)), host, port);
  int error = Connect(fd, ipv6 ? AF_INET6 : AF_INET, address->first, port, deadline);
  if (error == 0) return fd;
  ::close(fd);
  if (ipv6 && error != ETIMEDOUT) {
    return Dial(host, port, net::protocol::ipv4, timeout, deadline);  // as CAF does
  }
  if (error == ETIMEDOUT) {
    return Failed(absl::StrCat("connect timed out after ", timeout.count(), " ms"), host, port);
  }
  return Failed(absl::StrCat("connect: ", std::strerror(error)), host, port);
}

}  // namespace

caf::expected<net::native_socket> DialTcp(const std::string& host, uint16_t port,
                                          std::chrono::milliseconds timeout) {
  return Dial(host, port, caf::none, timeout, Clock::now() + timeout);
}

}  // namespace muster
