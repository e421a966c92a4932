// Reading the job token: a shared secret in a file (muster serve --token-file, the workers'
// AgentOptions::token, the CLI's --token-file), or the file named by $MUSTER_TOKEN_FILE.
#pragma once

#include <string>

#include <absl/status/statusor.h>

namespace muster {

// The token in `path`: its content without trailing whitespace. Possible errors: NotFound
// (unreadable file), InvalidArgument (empty, or over 4 KiB). The message names the file, never
// the content.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// The token of the file named by $MUSTER_TOKEN_FILE; "" when the variable is not set.
absl::StatusOr<std::string> TokenFromEnvironment();

}  // namespace muster
