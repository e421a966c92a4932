// The byte layer of a Muster connection under CAF's BASP broker: plain TCP, or TLS over it
// (net/transport/tls/tls_session.h), in the shape of CAF's stream policies. On plain TCP it also
// spends fewer system calls per message than CAF 0.17's own stream:
//  - read-ahead: one recv takes up to 16 KiB, and CAF's exact-size reads (a 32-byte BASP header,
//    then the payload it announces) are served from it; a recv that returned less than it asked
//    for emptied the socket, so the next read reports "nothing more" without asking the kernel.
//    The buffer exists only while it holds bytes (an idle connection costs nothing), and reads
//    of 16 KiB or more go straight into CAF's buffer;
//  - direct writes: GuardedStream::FlushNow writes what CAF has queued at once, instead of
//    registering for EPOLLOUT and writing on a later turn of the event loop (two epoll_ctl and
//    one epoll_wait per message); only what the socket does not take waits for EPOLLOUT.
//
//   read: [ahead empty] --recv--> [ahead holds bytes] --served to CAF--> [ahead empty]
//                                      \--recv returned < 16 KiB--> drained: next read is "none"
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/stream.hpp>

#include "muster/net/transport/tls/tls_session.h"

namespace muster {

class GuardedMultiplexer;

// How many TLS handshakes this process dialed to a peer on `port` failed on TLS itself
// (TlsSession::rejected: a certificate of another CA, a plain-TCP leader), counted per port
// (folded into a few counters) before CAF learns that the connection closed. The leader
// connector compares it before and after an attempt to tell a TLS mismatch, which never heals,
// from a leader that merely closed the connection (its limits, which may clear). Lock-free.
uint64_t OutboundTlsRejections(uint16_t port);

class WirePolicy {
 public:
  static constexpr size_t kReadAheadBytes = 16 << 10;

  explicit WirePolicy(std::unique_ptr<TlsSession> tls);
  // A connection this node dialed to `port`: its TLS rejections are counted
  // (OutboundTlsRejections).
  void CountRejectionsFor(uint16_t port) { outbound_port_ = port; }

  caf::io::network::rw_state read_some(size_t& result, caf::io::network::native_socket fd,
                                       void* buf, size_t len);
  caf::io::network::rw_state write_some(size_t& result, caf::io::network::native_socket fd,
                                        const void* buf, size_t len);
  // True while bytes already taken from the socket (read-ahead, or decrypted TLS records)
  // cover the next read of `threshold` bytes: CAF must read on without another event.
  bool must_read_more(caf::io::network::native_socket, size_t threshold) const;
  TlsSession* tls() const { return tls_.get(); }

 private:
  // Counts a rejected outbound TLS handshake once, before CAF sees the failure.
  caf::io::network::rw_state Counted(caf::io::network::rw_state state);

  std::unique_ptr<TlsSession> tls_;
  uint16_t outbound_port_ = 0;  // 0: accepted, or not counted
  bool counted_ = false;
  std::unique_ptr<char[]> ahead_;
  size_t ahead_begin_ = 0;
  size_t ahead_end_ = 0;
  bool drained_ = false;
};

// CAF's stream over a WirePolicy. While a TLS handshake waits for the peer, writing is paused
// (CAF 0.17 would poll a writable socket in a loop); a failed handshake is reported once.
// `owner` is the connection (scribe) that owns this stream: a resumed write takes it again as
// its manager.
class GuardedStream : public caf::io::network::stream {
 public:
  GuardedStream(GuardedMultiplexer& mpx, caf::io::network::stream_manager* owner,
                caf::io::network::native_socket fd, bool inbound, std::unique_ptr<TlsSession> tls);

  void handle_event(caf::io::network::operation op) override;

  // Writes the queued bytes now when the stream may (plain TCP, no write in progress);
  // otherwise, and for what the socket does not take, CAF's flush (EPOLLOUT).
  void FlushNow(const manager_ptr& mgr);

  bool tls() const { return policy_.tls() != nullptr; }
  TlsSession* session() const { return policy_.tls(); }

 private:
  void ReportHandshakeFailure(const std::string& why);

  GuardedMultiplexer& mpx_;
  caf::io::network::stream_manager* owner_;  // owns this stream: outlives it
  bool inbound_;
  std::string peer_;  // HOST:PORT of the peer, read when the connection was made (TLS only)
  WirePolicy policy_;
  bool write_paused_ = false;
};

}  // namespace muster
