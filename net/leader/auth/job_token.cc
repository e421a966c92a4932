#include "muster/net/leader/auth/job_token.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <absl/strings/ascii.h>
#include <absl/strings/str_cat.h>

namespace muster {

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(absl::StrCat("cannot read the job token file ", path));
  }
  std::ostringstream content;
  content << file.rdbuf();
  std::string token(absl::StripTrailingAsciiWhitespace(content.str()));
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("the job token file ", path, " is empty"));
  }
  if (token.size() > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("the job token file ", path, " holds over 4 KiB; a token is a short secret"));
  }
  return token;
}

absl::StatusOr<std::string> TokenFromEnvironment() {
  const char* path = std::getenv("MUSTER_TOKEN_FILE");
  if (path == nullptr || *path == '\0') return std::string{};
  auto token = ReadTokenFile(path);
  if (!token.ok()) {
    return absl::Status(token.status().code(),
                        absl::StrCat("MUSTER_TOKEN_FILE: ", token.status().message()));
  }
  return token;
}

}  // namespace muster
