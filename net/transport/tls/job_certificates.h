// Certificates for a job's mutual TLS: one CA and a certificate per node, signed by it (what
// `muster tls init` writes; see net/transport/tls/tls_context.h for how they are used).
#pragma once

#include <string>
#include <vector>

#include <absl/status/status.h>

namespace muster {

// Writes DIR/ca.pem and DIR/ca.key (the job's CA), and DIR/NAME.pem and DIR/NAME.key for each of
// `names` (EC P-256 keys, readable by the owner only; certificates valid `days` days, for both
// TLS client and server use). Creates DIR if needed and never overwrites a file.
// Possible errors: InvalidArgument (a bad name, days outside 1..36500), AlreadyExists (a file is
// there; nothing was overwritten), PermissionDenied (DIR cannot be written).
absl::Status WriteJobCertificates(const std::string& dir, const std::vector<std::string>& names,
                                  int days = 365);

// OK for a usable node name: letters, digits, '-', '_', '.', at most 64, not "ca".
absl::Status CheckCertificateName(const std::string& name);

}  // namespace muster
