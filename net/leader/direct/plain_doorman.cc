#include "muster/net/leader/direct/plain_doorman.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <caf/io/abstract_broker.hpp>
#include <caf/io/network/acceptor_impl.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/make_counted.hpp>

#include "muster/net/transport/wire/acceptor_policy.h"
#include "muster/net/transport/wire/guarded_stream.h"
#include "muster/net/transport/wire/tcp_dial.h"

namespace muster {
namespace {

namespace net = caf::io::network;

// A plain connection over the guarded layer's stream: reads ahead (a header and a small payload
// in one recv), and writes an answer at once from the flush instead of waiting for the socket to
// be reported writable (CAF's stream would add and remove it from the poll set for each).
class PlainScribe : public caf::io::scribe {
 public:
  PlainScribe(GuardedMultiplexer& mpx, net::native_socket fd)
      : scribe(net::conn_hdl_from_socket(fd)), stream_(mpx, this, fd, /*inbound=*/true, nullptr) {}

  void configure_read(caf::io::receive_policy::config config) override {
    stream_.configure_read(config);
    if (!launched_) {
      launched_ = true;
      stream_.start(this);
    }
  }
  void ack_writes(bool enable) override { stream_.ack_writes(enable); }
  std::vector<char>& wr_buf() override { return stream_.wr_buf(); }
  std::vector<char>& rd_buf() override { return stream_.rd_buf(); }
  void graceful_shutdown() override {
    stream_.graceful_shutdown();
    detach(&stream_.backend(), false);
  }
  void flush() override { stream_.FlushNow(this); }
  std::string addr() const override {
    auto x = net::remote_addr_of_fd(stream_.fd());
    return x ? *x : std::string{};
  }
  uint16_t port() const override {
    auto x = net::remote_port_of_fd(stream_.fd());
    return x ? *x : 0;
  }
  void add_to_loop() override { stream_.activate(this); }
  void remove_from_loop() override {
    stream_.passivate();
    ReleaseIfNeverPolled(stream_);
  }

 private:
  GuardedStream stream_;
  bool launched_ = false;
};

class PlainDoorman : public SheddingDoorman {
 public:
  using SheddingDoorman::SheddingDoorman;

  bool new_connection() override {
    if (detached()) return false;  // the broker let go while events were still queued
    // Not the guarded multiplexer's scribe, which reads the bytes as CAF's protocol.
    net::native_socket fd = acceptor_.accepted_socket();
    KeepTcpAlive(fd);
    // An answer its peer does not take (keep-alive sends no probe while data waits) ends the
    // connection after a minute.
    unsigned int unacknowledged_ms = 60'000;
    ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &unacknowledged_ms, sizeof unacknowledged_ms);
    caf::io::scribe_ptr scribe = caf::make_counted<PlainScribe>(mpx_, fd);
    auto hdl = scribe->hdl();
    parent()->add_scribe(std::move(scribe));
    return doorman::new_connection(&mpx_, hdl);
  }
};

}  // namespace

caf::expected<caf::io::doorman_ptr> NewPlainDoorman(GuardedMultiplexer& mpx, uint16_t port,
                                                    const std::string& host) {
  const char* in = host.empty() || host == "0.0.0.0" ? nullptr : host.c_str();
  auto fd = net::new_tcp_acceptor_impl(port, in, true);
  if (!fd) return std::move(fd.error());
  return caf::io::doorman_ptr{caf::make_counted<PlainDoorman>(mpx, *fd)};
}

}  // namespace muster
