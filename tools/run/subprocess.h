// Runs a program as a child process (multi-process tests, the demo): captures its output, waits
// with a bound, and kills it (and never leaves it behind: the child dies with the test process).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>
#include <absl/time/time.h>

namespace muster {

class Subprocess {
 public:
  // Starts `argv[0]` with arguments `argv[1..]`; stdout and stderr are captured together.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(std::vector<std::string> argv);

  ~Subprocess();  // kills and reaps the child if it still runs

  // Reads output until a line containing `needle` arrives; returns that line.
  // Possible errors: DeadlineExceeded (with the output so far), NotFound (the child exited).
  absl::StatusOr<std::string> WaitForLine(absl::string_view needle, absl::Duration timeout);

  // Reads output until `text` appears anywhere in it (earlier output included, nothing
  // consumed: processes that print in any order); false after `timeout` or at its end without it.
  bool WaitForOutput(absl::string_view text, absl::Duration timeout);

  // Waits for the child to exit and returns its exit code (128+N when killed by signal N).
  // Possible errors: DeadlineExceeded, after which the child is killed.
  absl::StatusOr<int> Wait(absl::Duration timeout);

  void Signal(int signal);
  pid_t pid() const { return pid_; }
  const std::string& output() const { return output_; }

 private:
  Subprocess(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  // Reads what is available within `timeout`; false at end of output.
  bool ReadSome(absl::Duration timeout);
  bool Reap(bool block);

  pid_t pid_;
  int fd_;
  std::string output_;
  size_t scanned_ = 0;  // output_ before this offset was searched by WaitForLine
  bool exited_ = false;
  int exit_code_ = -1;
};

}  // namespace muster
