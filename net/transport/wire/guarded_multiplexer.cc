#include "muster/net/transport/wire/guarded_multiplexer.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>

#include <absl/strings/str_cat.h>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/io/abstract_broker.hpp>
#include <caf/io/doorman.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/network/acceptor_impl.hpp>
#include <caf/io/network/native_socket.hpp>
#include <caf/make_counted.hpp>
#include <caf/node_id.hpp>

#include "muster/messages/status/caf_text.h"
#include "muster/net/transport/node_config.h"
#include "muster/net/transport/wire/acceptor_policy.h"
#include "muster/net/transport/wire/frame_assembler.h"
#include "muster/net/transport/wire/guarded_stream.h"
#include "muster/net/transport/wire/tcp_dial.h"

namespace muster {
namespace {

namespace net = caf::io::network;
using Clock = std::chrono::steady_clock;

}  // namespace

// A connection whose frames pass a FrameGuard before CAF reads them. A refused frame never
// reaches CAF: the connection is shut down, and what still arrives is dropped until CAF sees it
// closed. On an accepted connection, a payload over FrameAssembler::kPresizedBytes is read in
// chunks as it arrives and handed to CAF whole. Otherwise CAF's scribe_impl, over a
// GuardedStream.
class GuardedScribe : public caf::io::scribe {
 public:
  GuardedScribe(GuardedMultiplexer& mpx, net::native_socket fd, const WireLimits& limits,
                bool inbound, std::unique_ptr<TlsSession> tls, std::string host = {})
      : scribe(net::conn_hdl_from_socket(fd)),
        mpx_(mpx),
        limits_(limits),
        inbound_(inbound),
        host_(std::move(host)),
        guard_(limits, inbound, inbound ? &mpx.published() : nullptr,
               inbound ? mpx.own_node() : std::string{}),
        stream_(mpx, this, fd, inbound, std::move(tls)) {}
  ~GuardedScribe() override {
    if (watch_id_ != 0) mpx_.Unwatch(watch_id_);
    if (identity_) mpx_.ReleasePeerIdentity(peer_, *identity_);
    if (bytes_read_) mpx_.CloseBytesFrom(peer_);
    ReleaseChunks();
    if (!host_.empty()) mpx_.ReleaseHost(host_);
  }

  void WatchHandshake() {
    if (limits_.handshake_timeout_ms <= 0) return;
    handshake_deadline_ = Clock::now() + std::chrono::milliseconds(limits_.handshake_timeout_ms);
    mpx_.Watch(this, handshake_deadline_, &watch_id_);
  }

  // When the sweep must close this connection (Clock::time_point::max(): never, stop watching).
  Clock::time_point Deadline() const {
    if (closed_) return Clock::time_point::max();
    Clock::time_point deadline = Clock::time_point::max();
    if (!guard_.handshake_done()) deadline = handshake_deadline_;
    if (assembler_.active()) deadline = std::min(deadline, progress_deadline_);
    return deadline;
  }
  // The sweep found Deadline() passed.
  void CloseAtDeadline() {
    if (!guard_.handshake_done() && handshake_deadline_ <= Clock::now()) {
      Close(absl::StrCat("no handshake within ", limits_.handshake_timeout_ms, " ms"),
            Refusal::kHandshakeTimeout);
    } else {
      Close(absl::StrCat("a frame of ", assembler_.expected(), " bytes stalled after ",
                         assembler_.received(), " bytes: no more arrived within ",
                         limits_.frame_progress_timeout_ms, " ms"));
    }
  }

  bool consume(caf::execution_unit* ctx, const void* buf, size_t size) override {
    if (closed_) return true;
    auto bytes = absl::MakeConstSpan(static_cast<const char*>(buf), size);
    if (assembler_.active()) return ConsumeChunk(ctx, bytes);
    return Deliver(ctx, bytes);
  }

  // A second line of defence: CAF never gets to allocate a read buffer over the limit.
  void configure_read(caf::io::receive_policy::config config) override {
    // While a held frame arrives, CAF (fed heartbeats) asks for headers: the stream keeps reading
    // the frame's chunks.
    if (holding_header_) return;
    if (limits_.max_frame_bytes != 0 &&
        config.second > size_t{limits_.max_frame_bytes} + FrameGuard::kHeaderSize) {
      Close(absl::StrCat("a read of ", config.second, " bytes; the limit is ",
                         limits_.max_frame_bytes));
      config = caf::io::receive_policy::exactly(FrameGuard::kHeaderSize);
    }
    if (inbound_ && !closed_ && !assembler_.active() &&
        config.first == caf::io::receive_policy_flag::exactly &&
        FrameAssembler::Assembles(config.second)) {
      assembler_.Start(config.second);
      if (limits_.frame_progress_timeout_ms > 0) {
        progress_deadline_ =
            Clock::now() + std::chrono::milliseconds(limits_.frame_progress_timeout_ms);
        mpx_.Watch(this, progress_deadline_, &watch_id_);
      }
      config = caf::io::receive_policy::exactly(assembler_.NextChunk());
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
  void remove_from_loop() override {
    stream_.passivate();
    ReleaseIfNeverPolled(stream_);
  }

  void Close(absl::string_view why, Refusal kind = Refusal::kFrameRejected) {
    if (closed_) return;
    closed_ = true;
    std::string peer = addr();
    if (peer.empty()) peer = host_.empty() ? "?" : host_;
    mpx_.Report(kind, absl::StrCat("closed the connection from ", peer, ":", port(), ": ", why));
    assembler_.Reset();
    ReleaseChunks();
    net::shutdown_both(stream_.fd());
  }

  bool closed() const { return closed_; }

 private:
  // One header or one whole payload: the guard checks it, then CAF reads it.
  bool Deliver(caf::execution_unit* ctx, absl::Span<const char> bytes) {
    absl::Status verdict = guard_.Check(bytes);
    if (!verdict.ok()) {
      Close(verdict.message());
      return true;
    }
    if (!inbound_ && guard_.handshake_done() && guard_.awaiting_payload() &&
        HoldLargeFrame(bytes)) {
      return true;
    }
    if (!assembler_.active()) UnwatchWhenSettled();
    if (!peer_named_ && guard_.handshake_done() && !NamePeer()) return true;
    return caf::io::scribe::consume(ctx, bytes.data(), bytes.size());
  }

  // Tells PeerName the address the peer's node connects from, and, on an accepted TLS
  // connection, has the multiplexer hold the node's identity (who the certificate names). False
  // when the multiplexer refuses it: the connection is closed then, its handshake unread.
  bool NamePeer() {
    peer_named_ = true;
    const std::string& bytes = guard_.peer_node();
    caf::binary_deserializer source{static_cast<caf::execution_unit*>(nullptr), bytes.data(),
                                    bytes.size()};
    if (bytes.empty() || source(peer_)) return true;
    RememberPeerHost(peer_, host_.empty() ? addr() : host_);
    // A node we dialed (an agent's leader): the bytes of its large frames tell that it lives.
    if (!inbound_) bytes_read_ = mpx_.OpenBytesFrom(peer_);
    TlsSession* tls = stream_.session();
    if (!inbound_ || tls == nullptr) return true;
    absl::StatusOr<CertificateIdentity> identity = tls->PeerIdentity();
    CertificateIdentity held = identity.ok()
                                   ? *std::move(identity)
                                   : CertificateIdentity{CertificateIdentity::Kind::kUnknown, ""};
    if (!mpx_.HoldPeerIdentity(peer_, held)) {
      Close(absl::StrCat("its handshake names node ", PeerName(peer_),
                         ", which is held by a connection with another certificate (or too many "
                         "nodes are): a node speaks with one certificate"));
      return false;
    }
    identity_ = std::move(held);
    return true;
  }

  // Past the handshake and with no payload arriving, nothing is left to watch.
  void UnwatchWhenSettled() {
    if (watch_id_ == 0 || !guard_.handshake_done()) return;
    mpx_.Unwatch(watch_id_);
    watch_id_ = 0;
  }

  // A chunk of a payload being assembled; the whole payload goes to Deliver. CAF reads its
  // buffer from rd_buf() (scribe::consume), so the payload stands in for the chunk buffer
  // meanwhile.
  bool ConsumeChunk(caf::execution_unit* ctx, absl::Span<const char> chunk) {
    if (!inbound_) return ConsumeHeldChunk(ctx, chunk);
    if (!mpx_.ReserveFrameBytes(chunk.size())) {
      Close(absl::StrCat("a frame of ", assembler_.expected(), " bytes would pass the ",
                         limits_.max_unfinished_frame_bytes,
                         " bytes that every connection's unfinished frames may hold together"));
      return true;
    }
    reserved_ += chunk.size();
    if (!assembler_.Append(chunk)) {
      progress_deadline_ =
          Clock::now() + std::chrono::milliseconds(limits_.frame_progress_timeout_ms);
      stream_.configure_read(caf::io::receive_policy::exactly(assembler_.NextChunk()));
      return true;
    }
    std::vector<char>& payload = assembler_.payload();
    payload.swap(stream_.rd_buf());
    bool result = Deliver(ctx, absl::MakeConstSpan(stream_.rd_buf()));
    payload.swap(stream_.rd_buf());
    assembler_.Reset();
    ReleaseChunks();
    UnwatchWhenSettled();
    return result;
  }

  // On a connection this node dialed: the header of a frame whose payload is large is held
  // back from CAF while the payload arrives in chunks, and CAF is handed a BASP heartbeat (a
  // header of its own, nothing else) every kHeldFrameBeat meanwhile. CAF's connection timeout
  // counts whole frames: without these, a frame that takes longer than the timeout to arrive
  // (4 MiB over 1 MB/s) would close the connection though its bytes keep coming. When the
  // payload is complete, CAF gets the real header, then the payload.
  static constexpr auto kHeldFrameBeat = std::chrono::milliseconds(100);
  static constexpr char kHeartbeatOperation = 0x06;

  bool HoldLargeFrame(absl::Span<const char> header) {
    if (header.size() != FrameGuard::kHeaderSize) return false;
    const auto* b = reinterpret_cast<const unsigned char*>(header.data());
    const size_t length = (size_t{b[4]} << 24) | (size_t{b[5]} << 16) | (size_t{b[6]} << 8) | b[7];
    if (!FrameAssembler::Assembles(length)) return false;
    held_header_.assign(header.begin(), header.end());
    holding_header_ = true;
    last_held_beat_ = Clock::now();
    assembler_.Start(length);
    stream_.configure_read(caf::io::receive_policy::at_most(assembler_.NextChunk()));
    return true;
  }

  // Hands CAF `frame` (a header, or a payload it asked for) as if read from the connection.
  bool Feed(caf::execution_unit* ctx, std::vector<char>& frame) {
    frame.swap(stream_.rd_buf());
    bool result = caf::io::scribe::consume(ctx, stream_.rd_buf().data(), stream_.rd_buf().size());
    frame.swap(stream_.rd_buf());
    return result;
  }

  // Whatever arrived of the held frame (reads take what is there, at most a chunk): a slow
  // link still feeds CAF its heartbeats, whatever the size of a chunk.
  bool ConsumeHeldChunk(caf::execution_unit* ctx, absl::Span<const char> chunk) {
    if (bytes_read_) bytes_read_->fetch_add(chunk.size(), std::memory_order_relaxed);
    if (!assembler_.Append(chunk)) {
      stream_.configure_read(caf::io::receive_policy::at_most(assembler_.NextChunk()));
      if (Clock::now() - last_held_beat_ < kHeldFrameBeat) return true;
      last_held_beat_ = Clock::now();
      std::vector<char> beat(FrameGuard::kHeaderSize, 0);
      beat[0] = kHeartbeatOperation;
      return Feed(ctx, beat);
    }
    holding_header_ = false;
    std::vector<char> header = std::move(held_header_);
    if (!Feed(ctx, header)) return false;  // CAF asks for the payload next
    std::vector<char>& payload = assembler_.payload();
    payload.swap(stream_.rd_buf());
    bool result = Deliver(ctx, absl::MakeConstSpan(stream_.rd_buf()));
    payload.swap(stream_.rd_buf());
    assembler_.Reset();
    return result;
  }

  void ReleaseChunks() {
    if (reserved_ == 0) return;
    mpx_.ReleaseFrameBytes(reserved_);
    reserved_ = 0;
  }

  void Launch() {
    launched_ = true;
    stream_.start(this);
    // A TLS client speaks first, before CAF has anything to send: an empty write starts it.
    if (stream_.tls()) stream_.force_empty_write(this);
  }

  GuardedMultiplexer& mpx_;
  WireLimits limits_;
  bool inbound_;
  std::string host_;  // the peer's address, counted in AdmitHost (empty: not counted)
  // NamePeer ran.
  bool peer_named_ = false;
  caf::node_id peer_;  // the node the peer's handshake named
  // Who the peer's certificate names, when it was told (NamePeer).
  std::optional<CertificateIdentity> identity_;
  // On a connection this node dialed: the bytes of large frames read from its node
  // (BytesReadFrom).
  std::shared_ptr<std::atomic<uint64_t>> bytes_read_;
  // On a connection this node dialed: the header of a large frame still arriving (HoldLargeFrame).
  bool holding_header_ = false;
  std::vector<char> held_header_;
  Clock::time_point last_held_beat_{};
  FrameGuard guard_;
  FrameAssembler assembler_;
  size_t reserved_ = 0;  // of the multiplexer's budget of unfinished frame bytes
  Clock::time_point handshake_deadline_ = Clock::time_point::max();
  Clock::time_point progress_deadline_ = Clock::time_point::max();
  bool closed_ = false;
  bool launched_ = false;
  bool ack_writes_ = false;
  bool flush_deferred_ = false;
  uint64_t watch_id_ = 0;
  GuardedStream stream_;
};

namespace {

// A listening socket whose accepted connections are GuardedScribes with a handshake deadline.
class GuardedDoorman : public SheddingDoorman {
 public:
  using SheddingDoorman::SheddingDoorman;

  bool new_connection() override {
    if (detached()) return false;  // the broker let go while events were still queued
    net::native_socket fd = acceptor_.accepted_socket();
    auto host = net::remote_addr_of_fd(fd);
    std::string peer = host ? *host : std::string{"?"};
    if (!mpx_.AdmitHost(peer)) {
      auto port = net::remote_port_of_fd(fd);
      mpx_.Report(Refusal::kTooManyConnections,
                  absl::StrCat("refused a connection from ", peer, ":", port ? *port : 0, ": ",
                               peer, " holds ", mpx_.limits().max_connections_per_host,
                               " connections already (--max-connections-per-host)"));
      net::close_socket(fd);
      return true;
    }
    auto scribe =
        caf::make_counted<GuardedScribe>(mpx_, fd, mpx_.limits(), /*inbound=*/true,
                                         mpx_.NewTlsSession(fd, TlsSession::Role::kServer), peer);
    scribe->WatchHandshake();
    auto hdl = scribe->hdl();
    parent()->add_scribe(std::move(scribe));
    return doorman::new_connection(&mpx_, hdl);
  }
};

}  // namespace

// A timerfd in the multiplexer's loop: wakes it at the earliest deadline of a connection.
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
    mpx_.SweepDeadlines();
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
  limits_.max_unfinished_frame_bytes =
      static_cast<uint64_t>(caf::get_or(cfg, "muster.max-unfinished-frame-bytes",
                                        static_cast<int64_t>(defaults.max_unfinished_frame_bytes)));
  limits_.frame_progress_timeout_ms =
      caf::get_or(cfg, "muster.frame-progress-timeout-ms", defaults.frame_progress_timeout_ms);
  limits_.max_connections_per_host = static_cast<uint32_t>(caf::get_or(
      cfg, "muster.max-connections-per-host", int64_t{defaults.max_connections_per_host}));
  const int64_t default_connect_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(NodeOptions{}.connect_timeout).count();
  connect_timeout_ = std::chrono::milliseconds(
      std::max<int64_t>(caf::get_or(cfg, "muster.connect-timeout-ms", default_connect_ms), 1));
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
  auto fd = DialTcp(host, port, connect_timeout_);
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
}

void GuardedMultiplexer::Watch(GuardedScribe* scribe, Clock::time_point deadline, uint64_t* id) {
  if (*id == 0) {
    *id = next_watch_id_++;
    absl::MutexLock lock(&watch_mutex_);
    watched_.emplace(*id, scribe);
  }
  bool earliest = deadlines_.empty() || deadline < deadlines_.top().first;
  deadlines_.emplace(deadline, *id);
  if (!sweeper_) sweeper_ = std::make_unique<HandshakeSweeper>(*this);
  if (earliest) sweeper_->Arm(deadline - Clock::now());
}

void GuardedMultiplexer::Unwatch(uint64_t id) {
  bool none_left = false;
  {
    absl::MutexLock lock(&watch_mutex_);
    watched_.erase(id);
    none_left = watched_.empty();
  }
  // Lets the sweeper leave the event loop soon (SweepDeadlines sees nothing left).
  if (none_left && sweeper_) sweeper_->FireSoon();
}

void GuardedMultiplexer::SweepDeadlines() {
  auto now = Clock::now();
  // Held while closing: a scribe cannot finish its destructor (Unwatch) meanwhile.
  absl::MutexLock lock(&watch_mutex_);
  while (!deadlines_.empty() && deadlines_.top().first <= now) {
    uint64_t id = deadlines_.top().second;
    deadlines_.pop();
    auto it = watched_.find(id);
    if (it == watched_.end()) continue;
    GuardedScribe* scribe = it->second;
    Clock::time_point deadline = scribe->Deadline();
    if (deadline == Clock::time_point::max()) {
      watched_.erase(it);
    } else if (deadline > now) {
      deadlines_.emplace(deadline, id);  // it moved (a chunk arrived): look again then
    } else {
      watched_.erase(it);
      scribe->CloseAtDeadline();
    }
  }
  while (!deadlines_.empty() && !watched_.contains(deadlines_.top().second)) deadlines_.pop();
  if (deadlines_.empty()) {
    sweeper_->Disarm();
  } else {
    sweeper_->Arm(deadlines_.top().first - now);
  }
}

bool GuardedMultiplexer::ReserveFrameBytes(size_t bytes) {
  const uint64_t limit = limits_.max_unfinished_frame_bytes;
  uint64_t held = unfinished_frame_bytes_.load(std::memory_order_relaxed);
  do {
    if (limit != 0 && held + bytes > limit) return false;
  } while (!unfinished_frame_bytes_.compare_exchange_weak(held, held + bytes,
                                                          std::memory_order_relaxed));
  return true;
}

void GuardedMultiplexer::ReleaseFrameBytes(size_t bytes) {
  unfinished_frame_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
}

bool GuardedMultiplexer::AdmitHost(const std::string& host) {
  absl::MutexLock lock(&hosts_mutex_);
  uint32_t& connections = connections_per_host_[host];
  if (limits_.max_connections_per_host != 0 && connections >= limits_.max_connections_per_host) {
    return false;
  }
  ++connections;
  open_inbound_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void GuardedMultiplexer::ReleaseHost(const std::string& host) {
  absl::MutexLock lock(&hosts_mutex_);
  auto it = connections_per_host_.find(host);
  if (it == connections_per_host_.end()) return;
  open_inbound_.fetch_sub(1, std::memory_order_relaxed);
  if (--it->second == 0) connections_per_host_.erase(it);
}

void GuardedMultiplexer::SetPeerIdentityListener(PeerIdentityListener listener) {
  auto shared = std::make_shared<const PeerIdentityListener>(std::move(listener));
  absl::MutexLock lock(&identities_mutex_);
  identity_listener_ = std::move(shared);
}

bool GuardedMultiplexer::HoldPeerIdentity(const caf::node_id& node,
                                          const CertificateIdentity& identity) {
  std::shared_ptr<const PeerIdentityListener> listener;
  {
    absl::MutexLock lock(&identities_mutex_);
    if (!identity_listener_) return true;
    auto it = held_identities_.find(node);
    if (it == held_identities_.end()) {
      if (held_identities_.size() >= kMaxHeldNodes) return false;
      it = held_identities_.emplace(node, HeldIdentity{identity, 0}).first;
    } else if (it->second.identity.kind != identity.kind ||
               it->second.identity.name != identity.name) {
      return false;
    }
    ++it->second.connections;
    listener = identity_listener_;
  }
  (*listener)(node, identity, /*connected=*/true);
  return true;
}

void GuardedMultiplexer::ReleasePeerIdentity(const caf::node_id& node,
                                             const CertificateIdentity& identity) {
  std::shared_ptr<const PeerIdentityListener> listener;
  {
    absl::MutexLock lock(&identities_mutex_);
    auto it = held_identities_.find(node);
    if (it == held_identities_.end()) return;
    if (--it->second.connections <= 0) held_identities_.erase(it);
    listener = identity_listener_;
  }
  if (listener) (*listener)(node, identity, /*connected=*/false);
}

uint64_t GuardedMultiplexer::BytesReadFrom(caf::actor_system& system, const caf::node_id& node) {
  if (!system.has_middleman()) return 0;
  auto* mpx = dynamic_cast<GuardedMultiplexer*>(&system.middleman().backend());
  if (mpx == nullptr) return 0;
  absl::MutexLock lock(&mpx->bytes_mutex_);
  auto it = mpx->bytes_from_.find(node);
  return it == mpx->bytes_from_.end() ? 0 : it->second.counter->load(std::memory_order_relaxed);
}

std::shared_ptr<std::atomic<uint64_t>> GuardedMultiplexer::OpenBytesFrom(const caf::node_id& node) {
  absl::MutexLock lock(&bytes_mutex_);
  BytesFrom& from = bytes_from_[node];
  if (!from.counter) from.counter = std::make_shared<std::atomic<uint64_t>>(0);
  ++from.connections;
  return from.counter;
}

void GuardedMultiplexer::CloseBytesFrom(const caf::node_id& node) {
  absl::MutexLock lock(&bytes_mutex_);
  auto it = bytes_from_.find(node);
  if (it != bytes_from_.end() && --it->second.connections <= 0) bytes_from_.erase(it);
}

void GuardedMultiplexer::Report(Refusal why, const std::string& what) {
  int index = static_cast<int>(why);
  if (index >= 0 && index < static_cast<int>(refused_.size())) {
    refused_[index].fetch_add(1, std::memory_order_relaxed);
  }
  Report(what);
}

WireStats GuardedMultiplexer::Stats(caf::actor_system& system) {
  WireStats stats;
  if (!system.has_middleman()) return stats;
  auto* mpx = dynamic_cast<GuardedMultiplexer*>(&system.middleman().backend());
  if (mpx == nullptr) return stats;
  stats.open_inbound = mpx->open_inbound_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < stats.refused.size(); ++i) {
    stats.refused[i] = mpx->refused_[i].load(std::memory_order_relaxed);
  }
  return stats;
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
