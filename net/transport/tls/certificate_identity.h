// What a job's certificate says its holder is, and whether the job's CA binds tasks to their
// certificates (`muster tls init --tasks`).
//
// The subject of a certificate `muster tls init` writes: O "muster job" and CN the node's name
// ("leader", "worker", "cli" for the muster command). A task's certificate also has OU
// kTaskUnit and, as CN, the task's name (/job:worker/task:3). The CA of a job whose tasks have
// certificates of their own has OU kTaskBindingUnit: a leader that trusts such a CA accepts a
// task's registration, heartbeats and reports only from the certificate naming that task
// (net/leader/auth/peer_identities.h). Since only the CA's key signs certificates, a subject is as
// trustworthy as the CA.
#pragma once

#include <string>

#include <absl/status/statusor.h>

typedef struct x509_st X509;

namespace muster {

inline constexpr char kTaskUnit[] = "muster task";
inline constexpr char kTaskBindingUnit[] = "muster per-task certificates";
// The name of the muster command's own certificate (status, kv, task).
inline constexpr char kCliCertificateName[] = "cli";

struct CertificateIdentity {
  // kUnknown: a certificate that names nobody usable (no printable common name); it may act as
  // no task and run no launcher.
  enum class Kind { kNode, kCli, kTask, kUnknown };
  Kind kind = Kind::kNode;
  // The node's name, "cli", or the task's name (/job:<name>/task:<id>).
  std::string name;
};

// The identity in `cert`'s subject. Possible errors: InvalidArgument (no common name, or one
// that is not printable ASCII of at most 64 bytes).
absl::StatusOr<CertificateIdentity> IdentityOfCertificate(X509* cert);

// Whether a CA certificate of the PEM file `ca_file` (any of them, for a file that holds an old
// and a new CA while they rotate) binds tasks to their certificates. Possible errors: NotFound (the
// file cannot be read), InvalidArgument (no PEM certificate in it).
absl::StatusOr<bool> CaBindsTasks(const std::string& ca_file);

// "task /job:worker/task:3's certificate", "the muster command's certificate (cli)",
// "the certificate of node \"leader\"".
std::string DescribeIdentity(const CertificateIdentity& identity);

}  // namespace muster
