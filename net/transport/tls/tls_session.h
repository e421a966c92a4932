// One TLS connection over a non-blocking socket, in the shape of CAF's stream policies
// (read_some / write_some report caf::io::network::rw_state). The handshake runs inside the
// first reads and writes; until it is done nothing of the application's reaches the socket
// or the caller. A failed handshake (a plain-TCP peer, a certificate the CA did not sign, no
// certificate at all) fails the stream and says why once through failure().
//
// States: HANDSHAKE --done--> ESTABLISHED; HANDSHAKE --error--> FAILED; ESTABLISHED --peer
// closes or error--> FAILED. Used on the network thread only (after construction).
#pragma once

#include <cstddef>
#include <string>

#include <caf/io/network/native_socket.hpp>
#include <caf/io/network/rw_state.hpp>

#include "muster/net/transport/tls/certificate_identity.h"
#include "muster/net/transport/tls/tls_context.h"

typedef struct ssl_st SSL;

namespace muster {

class TlsSession {
 public:
  enum class Role { kClient, kServer };
  // `ctx` may be null (TLS files that never loaded): the session then fails at once.
  TlsSession(const SslContextPtr& ctx, caf::io::network::native_socket fd, Role role);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  caf::io::network::rw_state Read(size_t& result, void* buf, size_t len);
  caf::io::network::rw_state Write(size_t& result, const void* buf, size_t len);
  // Decrypted bytes already buffered (the socket may have nothing more to say about them).
  size_t Pending() const;

  bool established() const { return state_ == State::kEstablished; }
  bool failed() const { return state_ == State::kFailed; }
  // The handshake waits for the peer: writing before it answers would only spin.
  bool waiting_for_peer() const { return state_ == State::kHandshake && wants_read_; }
  // Why the handshake failed ("certificate verify failed: unable to get local issuer
  // certificate", "wrong version number", ...); empty otherwise, or once taken.
  std::string TakeHandshakeFailure();
  // The handshake failed on TLS itself (a certificate, a version, a plain-TCP peer, no usable
  // certificates here), not because the peer closed the connection: retrying cannot help.
  bool rejected() const { return rejected_; }
  // Once established: who the peer's (verified) certificate says it is.
  absl::StatusOr<CertificateIdentity> PeerIdentity() const;

 private:
  enum class State { kHandshake, kEstablished, kFailed };
  // Advances the handshake; false when it failed.
  bool Handshake();
  caf::io::network::rw_state Fail(int ret);

  SSL* ssl_ = nullptr;
  Role role_;
  State state_ = State::kHandshake;
  bool wants_read_ = false;
  bool rejected_ = false;
  std::string handshake_failure_;
};

}  // namespace muster
