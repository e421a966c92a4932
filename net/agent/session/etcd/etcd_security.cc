#include "muster/net/agent/session/etcd/etcd_security.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <utility>

#include <absl/cleanup/cleanup.h>
#include <absl/status/status.h>
#include <absl/strings/escaping.h>
#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/strip.h>

#include "muster/net/observe/httplib.h"

namespace muster {

EtcdSecurity EtcdSecurityFromEnv() {
  auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return value == nullptr ? std::string() : std::string(value);
  };
  EtcdSecurity security;
  security.ca_file = env("MUSTER_ETCD_CACERT");
  security.cert_file = env("MUSTER_ETCD_CERT");
  security.key_file = env("MUSTER_ETCD_KEY");
  security.user = env("MUSTER_ETCD_USER");
  security.password = env("MUSTER_ETCD_PASSWORD");
  security.password_file = env("MUSTER_ETCD_PASSWORD_FILE");
  security.tls = !security.ca_file.empty() || !security.cert_file.empty();
  return security;
}

std::shared_ptr<const EtcdSecurity> RegistrySecurity(const std::string& registry) {
  if (registry.empty()) return nullptr;
  return std::make_shared<const EtcdSecurity>(EtcdSecurityFromEnv());
}

absl::Status EtcdUserRequiredError(absl::string_view where) {
  return absl::UnauthenticatedError(
      absl::StrCat("etcd at ", where,
                   " requires a user (its authentication is on): set MUSTER_ETCD_USER and "
                   "MUSTER_ETCD_PASSWORD (or MUSTER_ETCD_PASSWORD_FILE)"));
}

absl::Status EtcdUserRefusedError(absl::string_view user, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("etcd refused user \"", absl::CHexEscape(user), "\" (", why,
                   "): check the user and its password (MUSTER_ETCD_USER, MUSTER_ETCD_PASSWORD)"));
}

absl::StatusOr<std::string> ReadEtcdSecurityFile(const std::string& path, absl::string_view what) {
  // A PEM file or a password: anything larger is not one.
  constexpr size_t kMaxBytes = 1 << 20;
  auto unreadable = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": cannot read ", path, " (does it exist, and may this user read it?)"));
  };
  // Opened without blocking (a FIFO would block the open), then a regular file only: a FIFO
  // would block the read, a device (/dev/zero) never end.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return unreadable();
  absl::Cleanup close_fd = [fd] { ::close(fd); };
  struct stat info;
  if (::fstat(fd, &info) != 0) return unreadable();
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", path, " is not a regular file"));
  }
  std::string contents;
  char chunk[64 << 10];
  while (contents.size() <= kMaxBytes) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return unreadable();
    if (n == 0) break;
    contents.append(chunk, static_cast<size_t>(n));
  }
  if (contents.empty() || contents.size() > kMaxBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", path, " is ", contents.empty() ? "empty" : "over 1 MiB"));
  }
  return contents;
}

absl::StatusOr<EtcdSecurity> CheckEtcdSecurity(EtcdSecurity security, bool https) {
  if (https || !security.ca_file.empty() || !security.cert_file.empty()) security.tls = true;
  if (security.cert_file.empty() != security.key_file.empty()) {
    return absl::InvalidArgumentError(
        "etcd's client certificate and key go together: give both MUSTER_ETCD_CERT and "
        "MUSTER_ETCD_KEY, or neither");
  }
  const std::pair<const std::string*, const char*> files[] = {
      {&security.ca_file, "etcd's CA (MUSTER_ETCD_CACERT)"},
      {&security.cert_file, "etcd's client certificate (MUSTER_ETCD_CERT)"},
      {&security.key_file, "etcd's client key (MUSTER_ETCD_KEY)"}};
  for (const auto& [path, what] : files) {
    if (path->empty()) continue;
    absl::StatusOr<std::string> read = ReadEtcdSecurityFile(*path, what);
    if (!read.ok()) return read.status();
    // OpenSSL would ask for an encrypted key's passphrase on the terminal.
    if (path == &security.key_file && absl::StrContains(*read, "ENCRYPTED")) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": ", *path,
                       " is encrypted: give the key unencrypted (readable by this user "
                       "only)"));
    }
  }
  if (!security.cert_file.empty()) {
    // Loaded as a connection loads them: a PEM certificate and its key.
    httplib::SSLClient probe("127.0.0.1", 1, security.cert_file, security.key_file);
    if (!probe.is_valid()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "etcd's client certificate ", security.cert_file, " and key ", security.key_file,
          " (MUSTER_ETCD_CERT, MUSTER_ETCD_KEY) do not load: each must be PEM, and the key the "
          "certificate's"));
    }
  }
  if (security.password.empty() && !security.password_file.empty()) {
    absl::StatusOr<std::string> read =
        ReadEtcdSecurityFile(security.password_file, "etcd's password (MUSTER_ETCD_PASSWORD_FILE)");
    if (!read.ok()) return read.status();
    security.password = std::string(absl::StripTrailingAsciiWhitespace(*read));
  }
  if (security.auth() && security.password.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd user \"", absl::CHexEscape(security.user),
                     "\" has no password: set MUSTER_ETCD_PASSWORD or MUSTER_ETCD_PASSWORD_FILE"));
  }
  if (!security.auth() && !security.password.empty()) {
    return absl::InvalidArgumentError("an etcd password without a user: set MUSTER_ETCD_USER too");
  }
  if (security.auth() && !security.tls) {
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd user \"", absl::CHexEscape(security.user),
        "\" over plain HTTP: its password would cross the network in clear. Give https:// "
        "endpoints (or MUSTER_ETCD_CACERT) to reach etcd over TLS"));
  }
  return security;
}

absl::Status CheckEtcdToken(absl::string_view token) {
  if (IsEtcdToken(token)) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat("etcd's authentication answered a token that is not one (", token.size(),
                   " bytes; at most ", kMaxEtcdTokenBytes, " of printable ASCII)"));
}

bool IsEtcdToken(absl::string_view token) {
  if (token.empty() || token.size() > kMaxEtcdTokenBytes) return false;
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) return false;  // printable ASCII: it goes in a header
  }
  return true;
}

}  // namespace muster
