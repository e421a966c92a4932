// What a listening socket of a node's guarded network layer shares with every other: the accept
// policy that sheds connections when the process is out of descriptors, the release of a
// handler that never reached the poll set, and the doorman over them
// (net/transport/wire/guarded_multiplexer.cc, and the leader's direct endpoint,
// net/leader/direct/plain_doorman.h).
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <string>

#include <caf/io/doorman.hpp>
#include <caf/io/network/acceptor_impl.hpp>
#include <caf/io/network/event_handler.hpp>
#include <caf/io/network/native_socket.hpp>
#include <caf/io/network/operation.hpp>

#include "muster/net/transport/wire/guarded_multiplexer.h"

namespace muster {

// Accepts like CAF's TCP policy, plus: out of descriptors (EMFILE, ENFILE), it closes its spare
// descriptor, accepts the waiting connection and closes it, then takes the spare back, so that
// the listening socket stops being readable instead of waking the network thread forever.
class SheddingTcp {
 public:
  explicit SheddingTcp(GuardedMultiplexer* mpx) : mpx_(mpx), spare_(OpenSpare()) {}
  ~SheddingTcp() {
    if (spare_ >= 0) ::close(spare_);
  }
  SheddingTcp(const SheddingTcp&) = delete;
  SheddingTcp& operator=(const SheddingTcp&) = delete;

  bool try_accept(caf::io::network::native_socket& result, caf::io::network::native_socket fd) {
    result = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (result >= 0) return true;
    result = caf::io::network::invalid_native_socket;
    int error = errno;
    if (error == EAGAIN || error == EWOULDBLOCK || error == EINTR || error == ECONNABORTED) {
      return true;  // nothing to accept after all
    }
    if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
      Shed(fd);
      return true;
    }
    return false;
  }

 private:
  static int OpenSpare() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

  void Shed(caf::io::network::native_socket fd) {
    if (spare_ >= 0) ::close(spare_);
    int refused = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (refused >= 0) ::close(refused);
    spare_ = OpenSpare();
    mpx_->Report(
        Refusal::kTooManyConnections,
        "out of file descriptors: refused a new connection (existing ones are still served; "
        "raise `ulimit -n` or close idle clients)");
  }

  GuardedMultiplexer* mpx_;
  int spare_;
};

// Called after a servant's handler was passivated. CAF 0.17 squashes an add and a del of one
// socket queued in the same turn into nothing, and then never calls removed_from_loop, so the
// handler keeps its manager, the servant that owns the handler, alive forever: a servant
// launched and closed before the loop's next turn (a doorman opened as the node stops) leaked
// with its socket. When the socket never reached the poll set for reading, the handler lets go
// here, as the loop would have.
inline void ReleaseIfNeverPolled(caf::io::network::event_handler& handler) {
  if ((handler.eventbf() & caf::io::network::input_mask) == 0)
    handler.removed_from_loop(caf::io::network::operation::read);
}

// A listening socket of the guarded layer: CAF's acceptor over SheddingTcp. What an accepted
// connection becomes is the subclass's (new_connection).
class SheddingDoorman : public caf::io::doorman {
 public:
  SheddingDoorman(GuardedMultiplexer& mpx, caf::io::network::native_socket fd)
      : doorman(caf::io::network::accept_hdl_from_socket(fd)),
        mpx_(mpx),
        acceptor_(mpx, fd, &mpx) {}

  void graceful_shutdown() override {
    acceptor_.graceful_shutdown();
    detach(&mpx_, false);
  }
  void launch() override { acceptor_.start(this); }
  std::string addr() const override {
    auto x = caf::io::network::local_addr_of_fd(acceptor_.fd());
    return x ? *x : std::string{};
  }
  uint16_t port() const override {
    auto x = caf::io::network::local_port_of_fd(acceptor_.fd());
    return x ? *x : 0;
  }
  void add_to_loop() override { acceptor_.activate(this); }
  void remove_from_loop() override {
    acceptor_.passivate();
    ReleaseIfNeverPolled(acceptor_);
  }

 protected:
  GuardedMultiplexer& mpx_;
  caf::io::network::acceptor_impl<SheddingTcp> acceptor_;
};

}  // namespace muster
