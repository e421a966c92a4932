#include "muster/net/transport/tls/tls_session.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <signal.h>

#include <utility>

#include <absl/strings/str_cat.h>

namespace muster {
namespace {

using caf::io::network::rw_state;

// OpenSSL writes with write(2), which raises SIGPIPE on a connection the peer has closed (CAF's
// plain TCP sends with MSG_NOSIGNAL). All TLS I/O of a node runs on its network thread: that
// thread blocks SIGPIPE once, and the error comes back as EPIPE instead of killing the process.
void BlockSigpipeOnThisThread() {
  thread_local bool blocked = false;
  if (blocked) return;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  blocked = true;
}

}  // namespace

TlsSession::TlsSession(const SslContextPtr& ctx, caf::io::network::native_socket fd, Role role)
    : role_(role) {
  if (ctx) ssl_ = SSL_new(ctx.get());
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd) != 1) {
    state_ = State::kFailed;
    handshake_failure_ = "no usable TLS certificates on this node (see the earlier message)";
    rejected_ = true;
    ERR_clear_error();
    return;
  }
  if (role == Role::kServer) {
    SSL_set_accept_state(ssl_);
  } else {
    SSL_set_connect_state(ssl_);
  }
}

TlsSession::~TlsSession() {
  if (ssl_ != nullptr) SSL_free(ssl_);
}

bool TlsSession::Handshake() {
  BlockSigpipeOnThisThread();
  ERR_clear_error();
  int ret = SSL_do_handshake(ssl_);
  if (ret == 1) {
    state_ = State::kEstablished;
    wants_read_ = false;
    return true;
  }
  switch (SSL_get_error(ssl_, ret)) {
    case SSL_ERROR_WANT_READ:
      wants_read_ = true;
      return true;
    case SSL_ERROR_WANT_WRITE:
      wants_read_ = false;
      return true;
    case SSL_ERROR_SSL: {
      rejected_ = true;
      unsigned long code = ERR_peek_last_error();
      const char* reason = code != 0 ? ERR_reason_error_string(code) : nullptr;
      handshake_failure_ = reason != nullptr ? reason : "TLS protocol error";
      long verify = SSL_get_verify_result(ssl_);
      if (verify != X509_V_OK) {
        absl::StrAppend(&handshake_failure_, ": ", X509_verify_cert_error_string(verify));
      }
      break;
    }
    default:
      handshake_failure_ = "the peer closed the connection during the TLS handshake";
      break;
  }
  ERR_clear_error();
  state_ = State::kFailed;
  return false;
}

absl::StatusOr<CertificateIdentity> TlsSession::PeerIdentity() const {
  if (state_ != State::kEstablished) {
    return absl::FailedPreconditionError("the TLS handshake is not done");
  }
  return IdentityOfCertificate(SSL_get0_peer_certificate(ssl_));
}

rw_state TlsSession::Fail(int ret) {
  switch (SSL_get_error(ssl_, ret)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      return rw_state::success;  // nothing moved this time; the caller sees 0 bytes
    default:
      ERR_clear_error();
      state_ = State::kFailed;
      return rw_state::failure;
  }
}

rw_state TlsSession::Read(size_t& result, void* buf, size_t len) {
  result = 0;
  if (state_ == State::kFailed) return rw_state::failure;
  if (state_ == State::kHandshake) {
    if (!Handshake()) return rw_state::failure;
    if (state_ != State::kEstablished) return rw_state::success;
  }
  if (len == 0) return rw_state::indeterminate;
  BlockSigpipeOnThisThread();
  ERR_clear_error();
  int ret = SSL_read(ssl_, buf, static_cast<int>(len));
  if (ret > 0) {
    result = static_cast<size_t>(ret);
    return rw_state::success;
  }
  return Fail(ret);
}

rw_state TlsSession::Write(size_t& result, const void* buf, size_t len) {
  result = 0;
  if (state_ == State::kFailed) return rw_state::failure;
  if (state_ == State::kHandshake) {
    if (!Handshake()) return rw_state::failure;
    // An empty write only drives the handshake (CAF then stops polling for writability).
    if (state_ != State::kEstablished)
      return len == 0 ? rw_state::indeterminate : rw_state::success;
  }
  if (len == 0) return rw_state::indeterminate;
  BlockSigpipeOnThisThread();
  ERR_clear_error();
  int ret = SSL_write(ssl_, buf, static_cast<int>(len));
  if (ret > 0) {
    result = static_cast<size_t>(ret);
    return rw_state::success;
  }
  return Fail(ret);
}

size_t TlsSession::Pending() const {
  return ssl_ != nullptr && state_ == State::kEstablished ? SSL_pending(ssl_) : 0;
}

std::string TlsSession::TakeHandshakeFailure() { return std::exchange(handshake_failure_, {}); }

}  // namespace muster
