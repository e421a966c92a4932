// The file of a leader's event log (muster serve --events FILE), free of CAF: opened for
// appending when the leader starts, so that a path it cannot write is refused then, and written
// one batch of JSON lines at a time by the event writer actor (event_writer_actor.h), the only
// user after the start. Each batch goes to the kernel in full before Append returns: a leader
// that dies loses no line it had handed over. Not thread-safe.
//
//   OPEN --Append ok--> OPEN;  OPEN --Append failed--> FAILED (every later Append fails the same)
#pragma once

#include <memory>
#include <string>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>

namespace muster {

class EventFile {
 public:
  // Opens `path` for appending, creating it (mode 0644) when it does not exist.
  // Possible errors: InvalidArgument (empty path), and the code of the open's errno
  // (PermissionDenied, NotFound for a missing directory, ...), each naming the path, the cause
  // and what to do.
  static absl::StatusOr<std::unique_ptr<EventFile>> Open(const std::string& path);
  ~EventFile();
  EventFile(const EventFile&) = delete;
  EventFile& operator=(const EventFile&) = delete;

  // Appends `lines` (each ending in a newline) to the file.
  // Possible errors: the code of the write's errno (ResourceExhausted for a full disk, ...),
  // naming the path and the cause; after one failure every call fails with it.
  absl::Status Append(absl::string_view lines);

  const std::string& path() const { return path_; }

 private:
  EventFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_;
  absl::Status failed_;
};

}  // namespace muster
