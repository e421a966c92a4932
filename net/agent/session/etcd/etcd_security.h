// How Muster reaches an etcd cluster that requires TLS or a user (docs/operations.md, "etcd
// with TLS and a user"): what etcdctl's --cacert, --cert, --key and --user say, read from the
// environment (MUSTER_ETCD_*) and checked before any connection. Used by the leader's etcd
// client (net/ha/etcd/etcd_client.h) and the agents' leader lookup (ha_leader_registry.h).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>

namespace muster {

// TLS and etcd's user (etcd's --client-cert-auth, `etcdctl auth enable`). Every process that
// talks to etcd (an HA leader, an agent or command given etcd://) takes it from its environment
// (EtcdSecurityFromEnv) unless its options give one.
struct EtcdSecurity {
  // TLS to the members (also on with https:// endpoints, or a CA file): their certificates are
  // checked against ca_file (PEM), or the system's trusted CAs when it is empty.
  bool tls = false;
  std::string ca_file;
  // This client's certificate and key (PEM), for members that require one (--client-cert-auth).
  std::string cert_file;
  std::string key_file;
  // etcd's authentication: a user and its password, or a file holding it (read by
  // CheckEtcdSecurity). The password is never logged or shown.
  std::string user;
  std::string password;
  std::string password_file;

  bool auth() const { return !user.empty(); }
};

// MUSTER_ETCD_CACERT, MUSTER_ETCD_CERT, MUSTER_ETCD_KEY, MUSTER_ETCD_USER and
// MUSTER_ETCD_PASSWORD (or MUSTER_ETCD_PASSWORD_FILE, a file holding it); TLS when a CA or a
// certificate is named.
EtcdSecurity EtcdSecurityFromEnv();
// For a session that reads the leaders of `registry` ("etcd://..."; empty: none) again later,
// on threads of its own: the environment's settings, taken now (null without a registry).
std::shared_ptr<const EtcdSecurity> RegistrySecurity(const std::string& registry);
// `security` checked and completed, for endpoints given as https:// when `https` (TLS on):
// each file named can be read (the password file's contents become the password), a
// certificate comes with its key and both load (PEM, the key unencrypted and the
// certificate's), a user comes with a password and TLS (never a password in clear). Possible
// errors: InvalidArgument naming the file or the setting (never the password).
absl::StatusOr<EtcdSecurity> CheckEtcdSecurity(EtcdSecurity security, bool https = false);
// The longest token an etcd authentication may answer (etcd's are simple tokens of 16 letters
// and an index, or JWTs of a few hundred bytes).
inline constexpr size_t kMaxEtcdTokenBytes = 4096;
// Whether `token`, as etcd answered it, is one to keep and send back: 1 to kMaxEtcdTokenBytes of
// printable ASCII.
bool IsEtcdToken(absl::string_view token);
// OK for a token IsEtcdToken keeps; otherwise Unavailable saying why (never the token).
absl::Status CheckEtcdToken(absl::string_view token);
// The errors both ways of reaching etcd give: etcd at `where` has its authentication on and no
// user was given (Unauthenticated); etcd refused `user` or its password, saying `why`
// (InvalidArgument; never the password).
absl::Status EtcdUserRequiredError(absl::string_view where);
absl::Status EtcdUserRefusedError(absl::string_view user, absl::string_view why);
// The contents of `path` (a PEM file named by an EtcdSecurity). Possible errors:
// InvalidArgument naming `what` and the file.
absl::StatusOr<std::string> ReadEtcdSecurityFile(const std::string& path, absl::string_view what);

}  // namespace muster
