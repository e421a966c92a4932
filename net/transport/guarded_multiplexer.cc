#include "muster/net/transport/guarded_multiplexer.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <absl/strings/str_cat.h>
#include <caf/actor_system_config.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/io/abstract_broker.hpp>
#include <caf/io/doorman.hpp>
#include <caf/io/network/acceptor_impl.hpp>
#include <caf/io/network/native_socket.hpp>
#include <caf/make_counted.hpp>
#include <caf/node_id.hpp>

#include "muster/net/transport/guarded_stream.h"

namespace muster {
namespace {

namespace net = caf::io::network;
using Clock = std::chrono::steady_clock;

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

  bool try_accept(net::native_socket& result, net::native_socket fd) {
    result = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (result >= 0) return true;
    result = net::invalid_native_socket;
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

  void Shed(net::native_socket fd) {
    if (spare_ >= 0) ::close(spare_);
    int refused = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (refused >= 0) ::close(refused);
    spare_ = OpenSpare();
    mpx_->Report(
        "out of file descriptors: refused a new connection (existing ones are still served; "
        "raise `ulimit -n` or close idle clients)");
  }

  GuardedMultiplexer* mpx_;
  int spare_;
};

}  // namespace

// A connection whose frames pass a FrameGuard before CAF reads them. A refused frame never
// reaches CAF: the connection is shut down, and what still arrives is dropped until CAF sees it
// closed. Otherwise CAF's scribe_impl, over a GuardedStream.
class GuardedScribe : public caf::io::scribe {
 public:
  GuardedScribe(GuardedMultiplexer& mpx, net::native_socket fd, const WireLimits& limits,
                bool inbound, std::unique_ptr<TlsSession> tls)
      : scribe(net::conn_hdl_from_socket(fd)),
        mpx_(mpx),
        limits_(limits),
        guard_(limits, inbound, inbound ? &mpx.published() : nullptr,
               inbound ? mpx.own_node() : std::string{}),
        stream_(mpx, fd, inbound, std::move(tls)) {}
  ~GuardedScribe() override {
    if (watch_id_ != 0) mpx_.Unwatch(watch_id_);
  }

  void WatchHandshake() { watch_id_ = mpx_.WatchHandshake(this); }

  bool consume(caf::execution_unit* ctx, const void* buf, size_t size) override {
    if (closed_) return true;
    absl::Status verdict = guard_.Check(absl::MakeConstSpan(static_cast<const char*>(buf), size));
    if (!verdict.ok()) {
      Close(verdict.message());
      return true;
    }
    if (watch_id_ != 0 && guard_.handshake_done()) {
      mpx_.Unwatch(watch_id_);
      watch_id_ = 0;
    }
    return caf::io::scribe::consume(ctx, buf, size);
  }

  // A second line of defence: CAF never gets to allocate a read buffer over the limit.
  void configure_read(caf::io::receive_policy::config config) override {
    if (limits_.max_frame_bytes != 0 &&
        config.second > size_t{limits_.max_frame_bytes} + FrameGuard::kHeaderSize) {
      Close(absl::StrCat("a read of ", config.second, " bytes; the limit is ",
                         limits_.max_frame_bytes));
      config = caf::io::receive_policy::exactly(FrameGuard::kHeaderSize);
    }
    stream_.configure_read(config);
    if (!launched_) Launch();
  }
  void ack_writes(bool enable) override {
    ack_writes_ = enable;
    stream_.ack_writes(enable);
  }
  std::vector<char>& wr_buf() override { return stream_.wr_buf(); }
  std::vector<char>& rd_buf() override { return stream_.rd_buf(); }
  void graceful_shutdown() override {
    FlushDeferred();  // what was queued before the shutdown still goes out
    stream_.graceful_shutdown();
    detach(&stream_.backend(), false);
  }
  // On the network thread, a flush is deferred to the end of the event loop's turn, so that
  // the messages of one turn leave in one write (GuardedMultiplexer::run).
  void flush() override {
    if (ack_writes_ || stream_.tls() || !mpx_.DefersFlushes()) {
      stream_.flush(this);
    } else if (!flush_deferred_) {
      flush_deferred_ = true;
      mpx_.DeferFlush(this);
    }
  }
  void FlushDeferred() {
    if (!flush_deferred_) return;
    flush_deferred_ = false;
    if (!closed_) stream_.FlushNow(this);
  }
  std::string addr() const override {
    auto x = net::remote_addr_of_fd(stream_.fd());
    return x ? *x : std::string{};
  }
  uint16_t port() const override {
    auto x = net::remote_port_of_fd(stream_.fd());
    return x ? *x : 0;
  }
  void add_to_loop() override { stream_.activate(this); }
  void remove_from_loop() override { stream_.passivate(); }

  void Close(absl::string_view why) {
    if (closed_) return;
    closed_ = true;
    std::string peer = addr();
    mpx_.Report(absl::StrCat("closed the connection from ", peer.empty() ? "?" : peer, ":", port(),
                             ": ", why));
    net::shutdown_both(stream_.fd());
  }

  bool handshake_done() const { return guard_.handshake_done(); }
  bool closed() const { return closed_; }

 private:
  void Launch() {
    launched_ = true;
    stream_.start(this);
    // A TLS client speaks first, before CAF has anything to send: an empty write starts it.
    if (stream_.tls()) stream_.force_empty_write(this);
  }

  GuardedMultiplexer& mpx_;
  WireLimits limits_;
  FrameGuard guard_;
  bool closed_ = false;
  bool launched_ = false;
  bool ack_writes_ = false;
  bool flush_deferred_ = false;
  uint64_t watch_id_ = 0;
  GuardedStream stream_;
};

namespace {

// A listening socket whose accepted connections are GuardedScribes with a handshake deadline.
class GuardedDoorman : public caf::io::doorman {
 public:
  GuardedDoorman(GuardedMultiplexer& mpx, net::native_socket fd)
      : doorman(net::accept_hdl_from_socket(fd)), mpx_(mpx), acceptor_(mpx, fd, &mpx) {}

  bool new_connection() override {
    if (detached()) return false;  // the broker let go while events were still queued
    net::native_socket fd = acceptor_.accepted_socket();
    auto scribe =
        caf::make_counted<GuardedScribe>(mpx_, fd, mpx_.limits(), /*inbound=*/true,
                                         mpx_.NewTlsSession(fd, TlsSession::Role::kServer));
    scribe->WatchHandshake();
    auto hdl = scribe->hdl();
    parent()->add_scribe(std::move(scribe));
    return doorman::new_connection(&mpx_, hdl);
  }
  void graceful_shutdown() override {
    acceptor_.graceful_shutdown();
    detach(&mpx_, false);
  }
  void launch() override { acceptor_.start(this); }
  std::string addr() const override {
    auto x = net::local_addr_of_fd(acceptor_.fd());
    return x ? *x : std::string{};
  }
  uint16_t port() const override {
    auto x = net::local_port_of_fd(acceptor_.fd());
    return x ? *x : 0;
  }
  void add_to_loop() override { acceptor_.activate(this); }
  void remove_from_loop() override { acceptor_.passivate(); }

 private:
  GuardedMultiplexer& mpx_;
  net::acceptor_impl<SheddingTcp> acceptor_;
};

}  // namespace

// A timerfd in the multiplexer's loop: wakes it at the earliest handshake deadline.
class HandshakeSweeper : public net::event_handler {
 public:
  explicit HandshakeSweeper(GuardedMultiplexer& mpx)
      : event_handler(mpx, ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)),
        mpx_(mpx) {}

  void Arm(Clock::duration in) {
    if (fd() < 0) return;
    if (!registered_) {  // state_.reading starts true: it cannot tell
      registered_ = true;
      state_.reading = true;
      backend().add(net::operation::read, fd(), this);
    }
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(in).count();
    if (ns <= 0) ns = 1;
    itimerspec spec{};
    spec.it_value.tv_sec = ns / 1'000'000'000;
    spec.it_value.tv_nsec = ns % 1'000'000'000;
    ::timerfd_settime(fd(), 0, &spec, nullptr);
  }

  // From any thread: fire as soon as possible (timerfd_settime is thread-safe).
  void FireSoon() {
    itimerspec spec{};
    spec.it_value.tv_nsec = 1;
    ::timerfd_settime(fd(), 0, &spec, nullptr);
  }

  // Leaves the event loop, which runs only while it has handlers: an idle sweeper must not keep
  // the network thread (and the actor system's shutdown) waiting.
  void Disarm() {
    if (!registered_) return;
    registered_ = false;
    itimerspec spec{};
    ::timerfd_settime(fd(), 0, &spec, nullptr);
    backend().del(net::operation::read, fd(), this);
  }

  void handle_event(net::operation op) override {
    if (op != net::operation::read) return;
    uint64_t expirations = 0;
    while (::read(fd(), &expirations, sizeof(expirations)) > 0) {
    }
    mpx_.SweepHandshakes();
  }
  void removed_from_loop(net::operation) override {}
  void graceful_shutdown() override {}

 private:
  GuardedMultiplexer& mpx_;
  bool registered_ = false;
};

void SetTlsFiles(caf::actor_system_config& cfg, const TlsFiles& files) {
  caf::put(cfg.content, "muster.tls-cert", files.cert);
  caf::put(cfg.content, "muster.tls-key", files.key);
  caf::put(cfg.content, "muster.tls-ca", files.ca);
}

TlsFiles TlsFilesOf(const caf::actor_system_config& cfg) {
  return TlsFiles{.cert = caf::get_or(cfg, "muster.tls-cert", std::string{}),
                  .key = caf::get_or(cfg, "muster.tls-key", std::string{}),
                  .ca = caf::get_or(cfg, "muster.tls-ca", std::string{})};
}

GuardedMultiplexer::GuardedMultiplexer(caf::actor_system* system) : default_multiplexer(system) {
  const auto& cfg = system->config();
  WireLimits defaults;
  limits_.max_frame_bytes = static_cast<uint32_t>(
      caf::get_or(cfg, "muster.max-frame-bytes", int64_t{defaults.max_frame_bytes}));
  limits_.max_handshake_bytes = static_cast<uint32_t>(
      caf::get_or(cfg, "muster.max-handshake-bytes", int64_t{defaults.max_handshake_bytes}));
  limits_.handshake_timeout_ms =
      caf::get_or(cfg, "muster.handshake-timeout-ms", defaults.handshake_timeout_ms);
  TlsFiles tls = TlsFilesOf(cfg);
  if (tls.enabled()) {
    tls_ = std::make_unique<TlsContext>(tls, [this](const std::string& what) { Report(what); });
  }
}

std::unique_ptr<TlsSession> GuardedMultiplexer::NewTlsSession(net::native_socket fd,
                                                              TlsSession::Role role) {
  if (!tls_) return nullptr;
  return std::make_unique<TlsSession>(tls_->Get(), fd, role);
}

GuardedMultiplexer::~GuardedMultiplexer() = default;

caf::io::scribe_ptr GuardedMultiplexer::new_scribe(net::native_socket fd) {
  WireLimits outbound = limits_;
  outbound.max_frame_bytes = 0;  // a peer we dialed: its answers may be large (key listings)
  return caf::make_counted<GuardedScribe>(*this, fd, outbound, /*inbound=*/false,
                                          NewTlsSession(fd, TlsSession::Role::kClient));
}

caf::expected<caf::io::scribe_ptr> GuardedMultiplexer::new_tcp_scribe(const std::string& host,
                                                                      uint16_t port) {
  auto fd = net::new_tcp_connection(host, port);
  if (!fd) return std::move(fd.error());
  return new_scribe(*fd);
}

caf::io::doorman_ptr GuardedMultiplexer::new_doorman(net::native_socket fd) {
  if (own_node_.empty()) {   // the node's id is set by now (not yet when this backend is made)
    std::vector<char> node;  // as CAF's handshakes carry it
    caf::binary_serializer sink{static_cast<caf::execution_unit*>(nullptr), node};
    if (system().node() != caf::node_id{} && !sink(system().node())) {
      own_node_.assign(node.begin(), node.end());
    }
  }
  return caf::make_counted<GuardedDoorman>(*this, fd);
}

caf::expected<caf::io::doorman_ptr> GuardedMultiplexer::new_tcp_doorman(uint16_t port,
                                                                        const char* in,
                                                                        bool reuse_addr) {
  auto fd = net::new_tcp_acceptor_impl(port, in, reuse_addr);
  if (!fd) return std::move(fd.error());
  return new_doorman(*fd);
}

void GuardedMultiplexer::DeferFlush(GuardedScribe* scribe) {
  deferred_flushes_.emplace_back(scribe);
}

void GuardedMultiplexer::DropDeferredWrites() { deferred_flushes_.clear(); }

void GuardedMultiplexer::FlushDeferredWrites() {
  if (deferred_flushes_.empty()) return;
  std::vector<caf::intrusive_ptr<GuardedScribe>> flushes;
  flushes.swap(deferred_flushes_);
  for (auto& scribe : flushes) scribe->FlushDeferred();
  handle_internal_events();  // a write that must wait for EPOLLOUT registers before the wait
}

uint64_t GuardedMultiplexer::WatchHandshake(GuardedScribe* scribe) {
  if (limits_.handshake_timeout_ms <= 0) return 0;
  uint64_t id = next_watch_id_++;
  {
    absl::MutexLock lock(&watch_mutex_);
    watched_.emplace(id, scribe);
  }
  auto timeout = std::chrono::milliseconds(limits_.handshake_timeout_ms);
  deadlines_.emplace_back(Clock::now() + timeout, id);
  if (!sweeper_) sweeper_ = std::make_unique<HandshakeSweeper>(*this);
  if (deadlines_.size() == 1) sweeper_->Arm(timeout);
  return id;
}

void GuardedMultiplexer::Unwatch(uint64_t id) {
  bool none_left = false;
  {
    absl::MutexLock lock(&watch_mutex_);
    watched_.erase(id);
    none_left = watched_.empty();
  }
  // Lets the sweeper leave the event loop soon (SweepHandshakes sees nothing left).
  if (none_left && sweeper_) sweeper_->FireSoon();
}

void GuardedMultiplexer::SweepHandshakes() {
  auto now = Clock::now();
  while (!deadlines_.empty() && deadlines_.front().first <= now) {
    uint64_t id = deadlines_.front().second;
    deadlines_.pop_front();
    // Held while closing: the scribe cannot finish its destructor (Unwatch) meanwhile.
    absl::MutexLock lock(&watch_mutex_);
    auto it = watched_.find(id);
    if (it == watched_.end()) continue;
    GuardedScribe* scribe = it->second;
    watched_.erase(it);
    if (!scribe->handshake_done() && !scribe->closed()) {
      scribe->Close(absl::StrCat("no handshake within ", limits_.handshake_timeout_ms, " ms"));
    }
  }
  absl::MutexLock lock(&watch_mutex_);
  while (!deadlines_.empty() && !watched_.contains(deadlines_.front().second)) {
    deadlines_.pop_front();
  }
  if (deadlines_.empty()) {
    sweeper_->Disarm();
  } else {
    sweeper_->Arm(deadlines_.front().first - now);
  }
}

void GuardedMultiplexer::Report(const std::string& what) {
  absl::MutexLock lock(&report_mutex_);
  auto now = Clock::now();
  if (now - last_report_ < std::chrono::seconds(1)) {
    ++suppressed_reports_;
    return;
  }
  std::string suppressed = suppressed_reports_ > 0
                               ? absl::StrCat(" (", suppressed_reports_, " more since the last)")
                               : std::string{};
  std::fprintf(stderr, "muster: %s%s\n", what.c_str(), suppressed.c_str());
  last_report_ = now;
  suppressed_reports_ = 0;
}

}  // namespace muster
