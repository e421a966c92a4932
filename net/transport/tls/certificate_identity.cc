#include "muster/net/transport/tls/certificate_identity.h"

#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <memory>

#include <absl/strings/str_cat.h>

namespace muster {
namespace {

// The first entry `nid` of `name` as text; empty when there is none or it is not printable
// ASCII of at most 64 bytes (`ok` false then).
std::string EntryOf(X509_NAME* name, int nid, bool* ok) {
  *ok = true;
  int index = X509_NAME_get_index_by_NID(name, nid, -1);
  if (index < 0) return {};
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, index));
  const int length = ASN1_STRING_length(data);
  const unsigned char* bytes = ASN1_STRING_get0_data(data);
  if (length <= 0 || length > 64 || bytes == nullptr) {
    *ok = false;
    return {};
  }
  std::string text(reinterpret_cast<const char*>(bytes), static_cast<size_t>(length));
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) {
      *ok = false;
      return {};
    }
  }
  return text;
}

}  // namespace

absl::StatusOr<CertificateIdentity> IdentityOfCertificate(X509* cert) {
  X509_NAME* subject = cert != nullptr ? X509_get_subject_name(cert) : nullptr;
  if (subject == nullptr) return absl::InvalidArgumentError("a certificate without a subject");
  bool ok = true;
  CertificateIdentity identity;
  identity.name = EntryOf(subject, NID_commonName, &ok);
  if (!ok || identity.name.empty()) {
    return absl::InvalidArgumentError(
        "a certificate whose subject has no common name of printable text (at most 64 bytes)");
  }
  const std::string unit = EntryOf(subject, NID_organizationalUnitName, &ok);
  if (ok && unit == kTaskUnit) {
    identity.kind = CertificateIdentity::Kind::kTask;
  } else if (identity.name == kCliCertificateName) {
    identity.kind = CertificateIdentity::Kind::kCli;
  }
  return identity;
}

absl::StatusOr<bool> CaBindsTasks(const std::string& ca_file) {
  std::unique_ptr<FILE, decltype(&std::fclose)> file(std::fopen(ca_file.c_str(), "r"), std::fclose);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read the CA file ", ca_file));
  bool any = false, binds = false;
  for (int i = 0; i < 64; ++i) {  // a bundle of a few CAs; 64 is plenty
    std::unique_ptr<X509, decltype(&X509_free)> ca(
        PEM_read_X509(file.get(), nullptr, nullptr, nullptr), X509_free);
    if (!ca) break;
    any = true;
    bool ok = true;
    binds |= EntryOf(X509_get_subject_name(ca.get()), NID_organizationalUnitName, &ok) ==
             kTaskBindingUnit;
  }
  ERR_clear_error();
  if (!any) return absl::InvalidArgumentError(absl::StrCat(ca_file, " holds no PEM certificate"));
  return binds;
}

std::string DescribeIdentity(const CertificateIdentity& identity) {
  switch (identity.kind) {
    case CertificateIdentity::Kind::kTask:
      return absl::StrCat("task ", identity.name, "'s certificate");
    case CertificateIdentity::Kind::kCli:
      return absl::StrCat("the muster command's certificate (", identity.name, ")");
    case CertificateIdentity::Kind::kUnknown:
      return "a certificate that names nobody (no printable common name)";
    case CertificateIdentity::Kind::kNode:
      break;
  }
  return absl::StrCat("the certificate of node \"", identity.name, "\"");
}

}  // namespace muster
