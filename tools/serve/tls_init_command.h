// `muster tls init DIR`: a CA and per-node certificates for a job's mutual TLS (see
// net/transport/tls/tls_context.h and docs/operations.md, Security).
#pragma once

#include <string>
#include <vector>

namespace muster::cli {

// Runs `muster tls` with the arguments that follow "tls" ("init" first); returns the exit code.
int RunTls(const std::vector<std::string>& argv);

}  // namespace muster::cli
