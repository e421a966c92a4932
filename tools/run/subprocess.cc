#include "muster/tools/run/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <absl/strings/str_cat.h>

namespace muster {

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(std::vector<std::string> argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    std::vector<char*> args;
    for (auto& arg : argv) args.push_back(arg.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  return std::unique_ptr<Subprocess>(new Subprocess(pid, fds[0]));
}

Subprocess::~Subprocess() {
  if (!exited_) {
    kill(pid_, SIGKILL);
    Reap(true);
  }
  close(fd_);
}

bool Subprocess::ReadSome(absl::Duration timeout) {
  pollfd pfd{fd_, POLLIN, 0};
  int ready = poll(&pfd, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
  if (ready <= 0) return true;
  char buffer[4096];
  ssize_t n = read(fd_, buffer, sizeof buffer);
  if (n <= 0) return false;
  output_.append(buffer, static_cast<size_t>(n));
  return true;
}

bool Subprocess::Reap(bool block) {
  int status = 0;
  if (waitpid(pid_, &status, block ? 0 : WNOHANG) != pid_) return false;
  exited_ = true;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

absl::StatusOr<std::string> Subprocess::WaitForLine(absl::string_view needle,
                                                    absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  bool open = true;
  while (true) {
    size_t found = output_.find(needle.data(), scanned_, needle.size());
    if (found != std::string::npos) {
      size_t begin = output_.rfind('\n', found);
      begin = begin == std::string::npos ? 0 : begin + 1;
      size_t end = output_.find('\n', found);
      if (end != std::string::npos) {
        scanned_ = end + 1;
        return output_.substr(begin, end - begin);
      }
    }
    if (!open) {
      return absl::NotFoundError(
          absl::StrCat("process exited before printing \"", needle, "\"; output:\n", output_));
    }
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrCat("no line with \"", needle, "\" in time; output:\n", output_));
    }
    open = ReadSome(std::min(left, absl::Milliseconds(100)));
  }
}

bool Subprocess::WaitForOutput(absl::string_view text, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  bool open = true;
  while (output_.find(text.data(), 0, text.size()) == std::string::npos) {
    const absl::Duration left = deadline - absl::Now();
    if (!open || left <= absl::ZeroDuration()) return false;
    open = ReadSome(std::min(left, absl::Milliseconds(100)));
  }
  return true;
}

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  bool open = true;
  while (!exited_) {
    if (Reap(false)) break;
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      kill(pid_, SIGKILL);
      Reap(true);
      return absl::DeadlineExceededError(
          absl::StrCat("process ", pid_, " did not exit in time; killed. Output:\n", output_));
    }
    if (open) {
      open = ReadSome(std::min(left, absl::Milliseconds(20)));
    } else {
      poll(nullptr, 0, 5);
    }
  }
  // Collect what the child wrote before it exited.
  for (size_t before = output_.size() + 1; open && before != output_.size();) {
    before = output_.size();
    open = ReadSome(absl::ZeroDuration());
  }
  return exit_code_;
}

void Subprocess::Signal(int signal) {
  if (!exited_) kill(pid_, signal);
}

}  // namespace muster
