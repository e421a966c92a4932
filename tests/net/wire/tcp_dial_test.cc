// DialTcp on loopback: a listening port, a closed one, and one whose accept queue is full (the
// kernel drops the SYN, as for a host cut off by a partition): the dial gives up at its timeout;
// and the timeout a node's options give its multiplexer.
#include "muster/net/transport/wire/tcp_dial.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/sec.hpp>

#include "muster/net/transport/node_config.h"
#include "muster/net/transport/wire/guarded_multiplexer.h"

namespace muster {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

// A listening socket on 127.0.0.1 with an ephemeral port; `backlog` connections wait unaccepted.
class Listener {
 public:
  explicit Listener(int backlog) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    EXPECT_EQ(::listen(fd_, backlog), 0);
    socklen_t length = sizeof(sa);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &length), 0);
    port_ = ntohs(sa.sin_port);
  }
  ~Listener() { ::close(fd_); }
  int fd() const { return fd_; }
  uint16_t port() const { return port_; }

 private:
  int fd_;
  uint16_t port_ = 0;
};

// A port that was just listened on and is closed again: nothing listens there.
uint16_t ClosedPort() { return Listener(1).port(); }

TEST(TcpDialTest, Listening_ConnectsANonBlockingCloseOnExecSocket) {
  Listener listener(4);
  auto fd = DialTcp("127.0.0.1", listener.port(), 2000ms);
  ASSERT_TRUE(fd) << caf::to_string(fd.error());
  EXPECT_NE(::fcntl(*fd, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(::fcntl(*fd, F_GETFD) & FD_CLOEXEC, 0);
  int accepted = ::accept(listener.fd(), nullptr, nullptr);
  EXPECT_GE(accepted, 0);
  ASSERT_EQ(::write(*fd, "x", 1), 1);
  char byte = 0;
  EXPECT_EQ(::read(accepted, &byte, 1), 1);
  EXPECT_EQ(byte, 'x');
  ::close(accepted);
  ::close(*fd);
}

TEST(TcpDialTest, ByName_ResolvesLocalhost) {
  Listener listener(4);
  auto fd = DialTcp("localhost", listener.port(), 2000ms);
  ASSERT_TRUE(fd) << caf::to_string(fd.error());
  ::close(*fd);
}

TEST(TcpDialTest, NothingListening_RefusedAtOnce) {
  auto fd = DialTcp("127.0.0.1", ClosedPort(), 2000ms);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error(), caf::sec::cannot_connect_to_node);
  EXPECT_THAT(caf::to_string(fd.error()), HasSubstr("Connection refused"));
}

// An IPv6 address that fails is tried over IPv4, as CAF does; "::1" has none, so the error
// is the IPv6 connect's, not the IPv4 lookup's "no such host".
TEST(TcpDialTest, Ipv6LiteralFails_KeepsItsOwnError) {
  auto fd = DialTcp("::1", ClosedPort(), 2000ms);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error(), caf::sec::cannot_connect_to_node);
  EXPECT_THAT(caf::to_string(fd.error()), HasSubstr("connect: "));
  EXPECT_THAT(caf::to_string(fd.error()), Not(HasSubstr("no such host")));
}

TEST(TcpDialTest, SynDropped_GivesUpAtTheTimeout) {
  Listener listener(1);  // its accept queue fills at once; then the kernel drops new SYNs
  std::vector<int> queued;
  caf::expected<caf::io::network::native_socket> fd = caf::sec::none;
  auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 8; ++i) {
    started = std::chrono::steady_clock::now();
    fd = DialTcp("127.0.0.1", listener.port(), 300ms);
    if (!fd) break;
    queued.push_back(*fd);
  }
  auto waited = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(fd) << "every dial connected: the accept queue never filled";
  EXPECT_EQ(fd.error(), caf::sec::cannot_connect_to_node);
  EXPECT_THAT(caf::to_string(fd.error()), HasSubstr("no answer to the connect within 300 ms"));
  // Our deadline ended it, not the kernel's SYN retries (a minute or more): a generous bound.
  EXPECT_LT(waited, 5s);
  EXPECT_GE(queued.size(), 1u);
  for (int queued_fd : queued) ::close(queued_fd);
}

// NodeOptions::connect_timeout reaches the node's multiplexer, which dials with it.
TEST(TcpDialTest, NodeOptions_SetTheMultiplexersConnectTimeout) {
  auto timeout_of = [](caf::timespan timeout) {
    NodeOptions options;
    options.connect_timeout = timeout;
    NodeConfig config{options};
    caf::actor_system system{config};
    auto* mpx = dynamic_cast<GuardedMultiplexer*>(&system.middleman().backend());
    EXPECT_NE(mpx, nullptr);
    return mpx != nullptr ? mpx->connect_timeout() : 0ms;
  };
  EXPECT_EQ(timeout_of(NodeOptions{}.connect_timeout), 2000ms);
  EXPECT_EQ(timeout_of(345ms), 345ms);
  EXPECT_EQ(timeout_of(caf::timespan{0}), 1ms);  // never 0: every connect would fail
}

}  // namespace
}  // namespace muster
