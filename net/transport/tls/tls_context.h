// Mutual TLS for a node's connections: the files (a CA, this node's certificate and key), their
// check, and the OpenSSL context built from them. GuardedMultiplexer wraps every connection of a
// node configured with TlsFiles in a TlsSession made from this context, behind its frame guard.
//
// Trust model: a job has its own CA (muster tls init makes one). A peer is accepted when its
// certificate chains to that CA; host names are not checked, so every certificate the CA signed
// is a member of the job. Both sides present and verify certificates; TLS 1.2 or newer.
//
// Rotation: the files are looked at again (at most once a second) when a connection starts; new
// files that load and match are used for new connections, existing ones keep theirs. Files that
// do not load are reported and the previous ones stay in use.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <absl/base/thread_annotations.h>
#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/synchronization/mutex.h>

typedef struct ssl_ctx_st SSL_CTX;

namespace muster {

struct TlsFiles {
  std::string cert;  // PEM: this node's certificate (its chain may follow it)
  std::string key;   // PEM: its private key (unencrypted)
  std::string ca;    // PEM: the CA certificates that sign the job's nodes
  // All three set: TLS on. None set: off. Anything else is an error (CheckTlsFiles).
  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

// The files of $MUSTER_TLS_CERT, $MUSTER_TLS_KEY and $MUSTER_TLS_CA (unset: empty).
TlsFiles TlsFilesFromEnvironment();

// Loads the files the way connections will. Possible errors: InvalidArgument (only some of the
// three set; a file that is not PEM of the right kind; a key that does not match the
// certificate), NotFound (a file that cannot be read). Messages name the file and the cause.
absl::Status CheckTlsFiles(const TlsFiles& files);

using SslContextPtr = std::shared_ptr<SSL_CTX>;

// Builds an OpenSSL context: TLS 1.2+, the certificate and key, the CA, peers verified.
absl::StatusOr<SslContextPtr> MakeSslContext(const TlsFiles& files);

// The context of a node's connections, rebuilt when the files change. Thread-safe.
class TlsContext {
 public:
  using Reporter = std::function<void(const std::string&)>;
  // `report` receives one line when changed files are refused (it is rate-limited there). The
  // files are looked at again at most every `recheck`.
  TlsContext(TlsFiles files, Reporter report,
             std::chrono::steady_clock::duration recheck = std::chrono::seconds(1));

  // The current context; null when the files have never loaded (every connection then fails,
  // and the reason is reported).
  SslContextPtr Get();

 private:
  // What tells a rewritten or replaced file: its modification time, size and inode.
  struct FileStamp {
    timespec mtime{};
    off_t size = 0;
    ino_t inode = 0;
  };
  struct Stamp {
    FileStamp cert, key, ca;
    bool operator==(const Stamp& other) const;
  };
  static Stamp StampOf(const TlsFiles& files);

  const TlsFiles files_;
  const Reporter report_;
  const std::chrono::steady_clock::duration recheck_;
  absl::Mutex mutex_;
  SslContextPtr current_ ABSL_GUARDED_BY(mutex_);
  Stamp stamp_ ABSL_GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point checked_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace muster
