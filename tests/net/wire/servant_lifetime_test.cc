// The lifetime of the network servants GuardedMultiplexer makes (net/transport/wire/
// guarded_multiplexer.cc): a listening socket or a connection that is started and stopped
// within one turn of the network thread is freed with its socket, although CAF 0.17's loop
// never tells it that it left the poll set (the two changes cancel out before they reach it).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <future>

#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/io/doorman.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/receive_policy.hpp>
#include <caf/io/scribe.hpp>

#include "muster/net/transport/node_config.h"
#include "muster/net/transport/wire/guarded_multiplexer.h"

namespace muster {
namespace {

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// 0 when a connection to 127.0.0.1:`port` was accepted (by the kernel's backlog at least), or
// the errno of the failed connect.
int ConnectError(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = Loopback(port);
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  int error = rc == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

class ServantLifetimeTest : public ::testing::Test {
 protected:
  // Runs `fn` on the node's network thread, where servants live, and waits for it.
  void OnNetworkThread(std::function<void(GuardedMultiplexer&)> fn) {
    auto* mpx = dynamic_cast<GuardedMultiplexer*>(&system_.middleman().backend());
    ASSERT_NE(mpx, nullptr);
    std::promise<void> done;
    mpx->dispatch([&] {
      fn(*mpx);
      done.set_value();
    });
    done.get_future().wait();
  }

  NodeConfig config_;
  caf::actor_system system_{config_};
};

TEST_F(ServantLifetimeTest, DoormanLaunchedAndStoppedInOneTurn_IsFreedAndStopsListening) {
  uint16_t port = 0;
  size_t references = 0;
  OnNetworkThread([&](GuardedMultiplexer& mpx) {
    auto doorman = mpx.new_tcp_doorman(0, "127.0.0.1", true);
    ASSERT_TRUE(doorman) << system_.render(doorman.error());
    port = (*doorman)->port();
    (*doorman)->launch();
    (*doorman)->remove_from_loop();
    references = (*doorman)->get_reference_count();
  });
  ASSERT_NE(port, 0);
  EXPECT_EQ(references, 1u);  // this test's only: the acceptor holds none
  EXPECT_EQ(ConnectError(port), ECONNREFUSED);
}

TEST_F(ServantLifetimeTest, ScribeStartedAndStoppedInOneTurn_IsFreedAndClosesItsConnection) {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = Loopback(0);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  int peer = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(peer, 0);
  ::close(listener);
  timeval patience{10, 0};  // a connection left open fails the test instead of hanging it
  ASSERT_EQ(::setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof(patience)), 0);

  size_t references = 0;
  OnNetworkThread([&](GuardedMultiplexer& mpx) {
    auto scribe = mpx.new_scribe(client);                            // takes the descriptor
    scribe->configure_read(caf::io::receive_policy::at_most(1024));  // starts reading
    scribe->remove_from_loop();
    references = scribe->get_reference_count();
  });
  EXPECT_EQ(references, 1u);
  char byte = 0;
  EXPECT_EQ(::recv(peer, &byte, 1, 0), 0);  // the scribe's end was closed: end of stream
  ::close(peer);
}

}  // namespace
}  // namespace muster
