#include "muster/net/transport/tls/job_certificates.h"

#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <utility>

#include <absl/container/flat_hash_set.h>
#include <absl/status/statusor.h>
#include <absl/strings/escaping.h>
#include <absl/strings/str_cat.h>

#include "muster/net/transport/tls/certificate_identity.h"

namespace muster {
namespace {

using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using CertPtr = std::unique_ptr<X509, decltype(&X509_free)>;

std::string SslReason() {
  unsigned long code = ERR_peek_last_error();
  const char* reason = code != 0 ? ERR_reason_error_string(code) : nullptr;
  ERR_clear_error();
  return reason != nullptr ? reason : "unknown OpenSSL error";
}

absl::StatusOr<KeyPtr> NewKey() {
  KeyPtr key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  if (!key) return absl::InternalError(absl::StrCat("cannot make a key: ", SslReason()));
  return key;
}

absl::Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr || X509_add_ext(cert, ext, -1) != 1) {
    if (ext != nullptr) X509_EXTENSION_free(ext);
    return absl::InternalError(absl::StrCat("cannot add ", value, ": ", SslReason()));
  }
  X509_EXTENSION_free(ext);
  return absl::OkStatus();
}

// A certificate for `key` named `name` (and in organizational unit `unit`, unless empty), signed
// by `issuer` (null: self-signed, a CA).
absl::StatusOr<CertPtr> NewCertificate(const std::string& name, const std::string& unit,
                                       EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key,
                                       int days) {
  CertPtr cert(X509_new(), X509_free);
  if (!cert) return absl::InternalError("cannot make a certificate");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof(serial));
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), int64_t{days} * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("muster job"), -1, -1, 0);
  if (!unit.empty()) {
    X509_NAME_add_entry_by_txt(subject, "OU", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(unit.c_str()), -1, -1, 0);
  }
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  const bool ca = issuer == nullptr;
  for (auto [nid, value] :
       ca ? std::vector<std::pair<int, const char*>>{{NID_basic_constraints,
                                                      "critical,CA:TRUE,pathlen:0"},
                                                     {NID_key_usage,
                                                      "critical,keyCertSign,cRLSign"},
                                                     {NID_subject_key_identifier, "hash"}}
          : std::vector<std::pair<int, const char*>>{
                {NID_basic_constraints, "critical,CA:FALSE"},
                {NID_key_usage, "critical,digitalSignature"},
                {NID_ext_key_usage, "serverAuth,clientAuth"}}) {
    if (absl::Status added = AddExtension(cert.get(), signer, nid, value); !added.ok()) {
      return added;
    }
  }
  if (X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0) {
    return absl::InternalError(absl::StrCat("cannot sign ", name, ": ", SslReason()));
  }
  return cert;
}

// Writes a new file (never over an existing one) with `mode`.
absl::Status WritePem(const std::string& path, mode_t mode,
                      const std::function<int(FILE*)>& write) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    return errno == EEXIST
               ? absl::AlreadyExistsError(absl::StrCat(
                     path, " exists already; use an empty directory (nothing was overwritten)"))
               : absl::PermissionDeniedError(
                     absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  FILE* file = ::fdopen(fd, "w");
  bool ok = file != nullptr && write(file) == 1;
  if (file != nullptr) ok = std::fclose(file) == 0 && ok;
  if (!ok) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status WriteKeyAndCert(const std::string& dir, const std::string& name, EVP_PKEY* key,
                             X509* cert) {
  absl::Status key_written = WritePem(absl::StrCat(dir, "/", name, ".key"), 0600, [&](FILE* f) {
    return PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
  if (!key_written.ok()) return key_written;
  return WritePem(absl::StrCat(dir, "/", name, ".pem"), 0644,
                  [&](FILE* f) { return PEM_write_X509(f, cert); });
}

bool GoodName(const std::string& name) {
  if (name.empty() || name.size() > 64 || name == "ca") return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return name.front() != '.';
}

// A job name fits a certificate's common name (/job:<job>/task:<id>, at most 64 bytes) and a
// file name.
absl::Status CheckTaskJob(const TaskCertificates& job) {
  if (!GoodName(job.job) || job.job.size() > 40) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad job name \"", job.job,
        "\" for task certificates: use letters, digits, '-', '_' and '.', at most 40"));
  }
  if (job.num_tasks < 1 || job.num_tasks > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("job ", job.job, ": ", job.num_tasks, " tasks; give 1 to 100000"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckCertificateName(const std::string& name) {
  if (GoodName(name)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("bad node name \"", name,
                   "\": use letters, digits, '-', '_' and '.', at most 64, not \"ca\""));
}

std::string TaskCertificateName(const std::string& job, int task_id) {
  return absl::StrCat("task-", job, "-", task_id);
}

absl::Status WriteJobCertificates(const std::string& dir, const std::vector<std::string>& names,
                                  int days, const std::vector<TaskCertificates>& tasks) {
  if (days < 1 || days > 36500) return absl::InvalidArgumentError("days must be 1 to 36500");
  if (names.empty()) return absl::InvalidArgumentError("no node names");
  for (const std::string& name : names) {
    if (absl::Status good = CheckCertificateName(name); !good.ok()) return good;
  }
  absl::flat_hash_set<std::string> files(names.begin(), names.end());
  if (files.size() != names.size()) return absl::InvalidArgumentError("a node name given twice");
  for (const TaskCertificates& job : tasks) {
    if (absl::Status good = CheckTaskJob(job); !good.ok()) return good;
    // Both checks before anything is written: a job given twice, a node named like a task file.
    for (int i = 0; i < job.num_tasks; ++i) {
      if (!files.insert(TaskCertificateName(job.job, i)).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("job ", job.job, " is given twice, or a node name is ",
                         TaskCertificateName(job.job, i), ", a task's file"));
      }
    }
  }
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
  }
  auto ca_key = NewKey();
  if (!ca_key.ok()) return ca_key.status();
  unsigned char id[4];
  RAND_bytes(id, sizeof(id));
  // A name of its own: a peer of another job's CA is then "unable to get local issuer".
  auto ca = NewCertificate(
      absl::StrCat("muster job CA ",
                   absl::BytesToHexString(absl::string_view(reinterpret_cast<char*>(id), 4))),
      tasks.empty() ? "" : kTaskBindingUnit, ca_key->get(), nullptr, nullptr, days);
  if (!ca.ok()) return ca.status();
  if (absl::Status written = WriteKeyAndCert(dir, "ca", ca_key->get(), ca->get()); !written.ok()) {
    return written;
  }
  auto issue = [&](const std::string& file, const std::string& name,
                   const std::string& unit) -> absl::Status {
    auto key = NewKey();
    if (!key.ok()) return key.status();
    auto cert = NewCertificate(name, unit, key->get(), ca->get(), ca_key->get(), days);
    if (!cert.ok()) return cert.status();
    return WriteKeyAndCert(dir, file, key->get(), cert->get());
  };
  for (const std::string& name : names) {
    if (absl::Status written = issue(name, name, ""); !written.ok()) return written;
  }
  for (const TaskCertificates& job : tasks) {
    for (int i = 0; i < job.num_tasks; ++i) {
      absl::Status written = issue(TaskCertificateName(job.job, i),
                                   absl::StrCat("/job:", job.job, "/task:", i), kTaskUnit);
      if (!written.ok()) return written;
    }
  }
  return absl::OkStatus();
}

}  // namespace muster
