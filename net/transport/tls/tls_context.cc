#include "muster/net/transport/tls/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include <absl/strings/str_cat.h>

namespace muster {
namespace {

// The reason of OpenSSL's most recent error ("no start line", "key values mismatch"), and the
// error queue emptied.
std::string SslReason() {
  unsigned long code = ERR_peek_last_error();
  const char* reason = code != 0 ? ERR_reason_error_string(code) : nullptr;
  std::string text = reason != nullptr ? reason : "unknown OpenSSL error";
  ERR_clear_error();
  return text;
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

absl::Status Readable(const std::string& what, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the TLS ", what, " file ", path, "; check the path"));
  }
  return absl::OkStatus();
}

}  // namespace

TlsFiles TlsFilesFromEnvironment() {
  return TlsFiles{
      .cert = Env("MUSTER_TLS_CERT"), .key = Env("MUSTER_TLS_KEY"), .ca = Env("MUSTER_TLS_CA")};
}

absl::StatusOr<SslContextPtr> MakeSslContext(const TlsFiles& files) {
  if (files.cert.empty() || files.key.empty() || files.ca.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs a certificate, its key and the job's CA (--tls-cert, --tls-key, --tls-ca or "
        "MUSTER_TLS_CERT, MUSTER_TLS_KEY, MUSTER_TLS_CA); some are missing");
  }
  for (const auto& [what, path] :
       {std::pair{"certificate", &files.cert}, {"key", &files.key}, {"CA", &files.ca}}) {
    if (absl::Status readable = Readable(what, *path); !readable.ok()) return readable;
  }
  ERR_clear_error();
  SslContextPtr ctx(SSL_CTX_new(TLS_method()), SSL_CTX_free);
  if (!ctx) return absl::InternalError(absl::StrCat("cannot create a TLS context: ", SslReason()));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION);
  // CAF's streams write what they can and retry the rest from a buffer that may have moved.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), files.cert.c_str()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the TLS certificate ", files.cert, " does not load: ", SslReason()));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), files.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the TLS key ", files.key,
                     " does not load (PEM, unencrypted) or does not match the certificate ",
                     files.cert, ": ", SslReason()));
  }
  if (SSL_CTX_check_private_key(ctx.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("the TLS key ", files.key,
                                                   " does not match the certificate ", files.cert,
                                                   ": ", SslReason()));
  }
  if (SSL_CTX_load_verify_locations(ctx.get(), files.ca.c_str(), nullptr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the TLS CA file ", files.ca, " does not load: ", SslReason()));
  }
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return ctx;
}

absl::Status CheckTlsFiles(const TlsFiles& files) {
  if (!files.enabled()) return absl::OkStatus();
  return MakeSslContext(files).status();
}

bool TlsContext::Stamp::operator==(const Stamp& other) const {
  auto same = [](const FileStamp& a, const FileStamp& b) {
    return a.mtime.tv_sec == b.mtime.tv_sec && a.mtime.tv_nsec == b.mtime.tv_nsec &&
           a.size == b.size && a.inode == b.inode;
  };
  return same(cert, other.cert) && same(key, other.key) && same(ca, other.ca);
}

TlsContext::Stamp TlsContext::StampOf(const TlsFiles& files) {
  auto of = [](const std::string& path) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return FileStamp{};
    return FileStamp{info.st_mtim, info.st_size, info.st_ino};
  };
  return Stamp{of(files.cert), of(files.key), of(files.ca)};
}

TlsContext::TlsContext(TlsFiles files, Reporter report, std::chrono::steady_clock::duration recheck)
    : files_(std::move(files)), report_(std::move(report)), recheck_(recheck) {
  absl::MutexLock lock(&mutex_);
  stamp_ = StampOf(files_);
  checked_ = std::chrono::steady_clock::now();
  auto ctx = MakeSslContext(files_);
  if (ctx.ok()) {
    current_ = *std::move(ctx);
  } else {
    report_(absl::StrCat("TLS is off for this node's connections, every one will fail: ",
                         ctx.status().message()));
  }
}

SslContextPtr TlsContext::Get() {
  absl::MutexLock lock(&mutex_);
  auto now = std::chrono::steady_clock::now();
  if (now - checked_ < recheck_) return current_;
  checked_ = now;
  Stamp stamp = StampOf(files_);
  if (stamp == stamp_) return current_;
  stamp_ = stamp;
  auto ctx = MakeSslContext(files_);
  if (ctx.ok()) {
    current_ = *std::move(ctx);
  } else {
    report_(absl::StrCat("changed TLS files refused, new connections keep the previous ones: ",
                         ctx.status().message()));
  }
  return current_;
}

}  // namespace muster
