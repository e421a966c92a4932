#include "muster/actors/observe/events/event_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include <absl/strings/str_cat.h>

namespace muster {

absl::StatusOr<std::unique_ptr<EventFile>> EventFile::Open(const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("the event file has no path; name a file (--events FILE)");
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    return absl::ErrnoToStatus(
        error, absl::StrCat("cannot open the event file ", path,
                            " for appending; give a file in a directory that exists and that "
                            "the leader may write (--events FILE)"));
  }
  return std::unique_ptr<EventFile>(new EventFile(path, fd));
}

EventFile::~EventFile() { ::close(fd_); }

absl::Status EventFile::Append(absl::string_view lines) {
  if (!failed_.ok()) return failed_;
  while (!lines.empty()) {
    ssize_t written = ::write(fd_, lines.data(), lines.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) {
      const int error = errno;
      failed_ = absl::ErrnoToStatus(
          error, absl::StrCat("cannot append to the event file ", path_,
                              "; the leader keeps its events in memory only from now on "
                              "(muster events still shows them)"));
      return failed_;
    }
    lines.remove_prefix(static_cast<size_t>(written));
  }
  return absl::OkStatus();
}

}  // namespace muster
