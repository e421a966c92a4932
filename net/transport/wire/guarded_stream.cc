#include "muster/net/transport/wire/guarded_stream.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>

#include <absl/strings/str_cat.h>
#include <caf/io/network/native_socket.hpp>
#include <caf/policy/tcp.hpp>

#include "muster/net/transport/wire/guarded_multiplexer.h"

namespace muster {

namespace net = caf::io::network;

namespace {

constexpr size_t kRejectionCounters = 64;
std::array<std::atomic<uint64_t>, kRejectionCounters> outbound_tls_rejections{};

}  // namespace

uint64_t OutboundTlsRejections(uint16_t port) {
  return outbound_tls_rejections[port % kRejectionCounters].load(std::memory_order_acquire);
}

WirePolicy::WirePolicy(std::unique_ptr<TlsSession> tls) : tls_(std::move(tls)) {}

net::rw_state WirePolicy::Counted(net::rw_state state) {
  if (state == net::rw_state::failure && outbound_port_ != 0 && !counted_ && tls_->rejected()) {
    counted_ = true;
    outbound_tls_rejections[outbound_port_ % kRejectionCounters].fetch_add(
        1, std::memory_order_acq_rel);
  }
  return state;
}

net::rw_state WirePolicy::read_some(size_t& result, net::native_socket fd, void* buf, size_t len) {
  if (tls_) return Counted(tls_->Read(result, buf, len));
  if (ahead_begin_ == ahead_end_) {
    result = 0;
    if (drained_) {  // the socket was empty after the last recv: wait for the next event
      drained_ = false;
      return net::rw_state::success;
    }
    if (len >= kReadAheadBytes) {  // a large read goes straight into CAF's buffer
      net::rw_state state = caf::policy::tcp::read_some(result, fd, buf, len);
      drained_ = state == net::rw_state::success && result > 0 && result < len;
      return state;
    }
    if (!ahead_) ahead_.reset(new char[kReadAheadBytes]);
    size_t got = 0;
    net::rw_state state = caf::policy::tcp::read_some(got, fd, ahead_.get(), kReadAheadBytes);
    if (state != net::rw_state::success || got == 0) return state;
    ahead_begin_ = 0;
    ahead_end_ = got;
    drained_ = got < kReadAheadBytes;
  }
  size_t n = std::min(len, ahead_end_ - ahead_begin_);
  std::memcpy(buf, ahead_.get() + ahead_begin_, n);
  ahead_begin_ += n;
  result = n;
  if (ahead_begin_ == ahead_end_) ahead_.reset();  // an idle connection holds no buffer
  return net::rw_state::success;
}

net::rw_state WirePolicy::write_some(size_t& result, net::native_socket fd, const void* buf,
                                     size_t len) {
  return tls_ ? Counted(tls_->Write(result, buf, len))
              : caf::policy::tcp::write_some(result, fd, buf, len);
}

bool WirePolicy::must_read_more(net::native_socket, size_t threshold) const {
  size_t pending = tls_ ? tls_->Pending() : ahead_end_ - ahead_begin_;
  return pending > 0 && pending >= threshold;
}

GuardedStream::GuardedStream(GuardedMultiplexer& mpx, net::stream_manager* owner,
                             net::native_socket fd, bool inbound, std::unique_ptr<TlsSession> tls)
    : stream(mpx, fd), mpx_(mpx), owner_(owner), inbound_(inbound), policy_(std::move(tls)) {
  if (policy_.tls() != nullptr) {  // now: a refused peer has often closed by the time it is
    auto host = net::remote_addr_of_fd(fd);
    auto port = net::remote_port_of_fd(fd);
    peer_ = absl::StrCat(host ? *host : "?", ":", port ? *port : 0);
    if (!inbound_ && port) policy_.CountRejectionsFor(*port);
  }
}

void GuardedStream::handle_event(net::operation op) {
  handle_event_impl(op, policy_);
  TlsSession* tls = policy_.tls();
  if (tls == nullptr) return;
  if (tls->failed()) {
    std::string why = tls->TakeHandshakeFailure();
    if (!why.empty()) ReportHandshakeFailure(why);
  } else if (op == net::operation::write && state_.writing && tls->waiting_for_peer()) {
    backend().del(net::operation::write, fd(), this);
    write_paused_ = true;
  } else if (op == net::operation::read && write_paused_ && !tls->waiting_for_peer()) {
    write_paused_ = false;
    if (state_.writing) {
      // Once the pause took the socket out of the poll set for writing, CAF dropped the write's
      // manager: resumed without it, a failed write (or an acknowledged one) would call a null
      // manager. The write starts again where it stopped, with its owner as the manager.
      state_.writing = false;
      force_empty_write(manager_ptr{owner_});
    }
  }
}

void GuardedStream::FlushNow(const manager_ptr& mgr) {
  std::vector<char>& queued = wr_buf();  // CAF's buffer of bytes not yet handed to a write
  if (queued.empty()) return;
  if (policy_.tls() == nullptr && !state_.writing) {
    size_t written = 0;
    net::rw_state state = policy_.write_some(written, fd(), queued.data(), queued.size());
    if (state == net::rw_state::success && written == queued.size()) {
      queued.clear();
      return;
    }
    if (state == net::rw_state::success && written > 0) {
      queued.erase(queued.begin(), queued.begin() + static_cast<std::ptrdiff_t>(written));
    }
  }
  flush(mgr);  // the rest, or an error, takes CAF's way
}

void GuardedStream::ReportHandshakeFailure(const std::string& why) {
  // The peer as recorded when the connection was made: a refused peer has usually closed by now,
  // and the socket no longer knows its address.
  mpx_.Report(inbound_ ? Refusal::kTlsFailed : Refusal::kCount,
              inbound_ ? absl::StrCat("refused a connection from ", peer_,
                                      " (TLS handshake failed: ", why, ")")
                       : absl::StrCat("TLS handshake with ", peer_, " failed: ", why));
}

}  // namespace muster
