#include "muster/net/launcher/task_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include <absl/container/flat_hash_map.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>

#include "muster/messages/process_exit.h"

extern char** environ;

namespace muster::cli {
namespace {

constexpr size_t kMaxLine = 64 * 1024;

absl::StatusOr<std::string> FindProgram(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("an empty command");
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) != 0) {
      return absl::NotFoundError(absl::StrCat(name, ": ", strerror(errno)));
    }
    return name;
  }
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(name, ": not found on PATH"));
}

// This process's environment with `extra` set (replacing variables of the same name).
std::vector<std::string> MergedEnvironment(const TaskProcess::Environment& extra) {
  absl::flat_hash_map<std::string, size_t> index;
  std::vector<std::string> merged;
  for (char** entry = environ; entry && *entry; ++entry) {
    absl::string_view text(*entry);
    index[std::string(text.substr(0, text.find('=')))] = merged.size();
    merged.emplace_back(text);
  }
  for (const auto& [name, value] : extra) {
    std::string text = absl::StrCat(name, "=", value);
    auto it = index.find(name);
    if (it != index.end()) {
      merged[it->second] = std::move(text);
    } else {
      index[name] = merged.size();
      merged.push_back(std::move(text));
    }
  }
  return merged;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void Exec(pid_t parent, int in, int out, int err, const char* path, char** argv,
                       char** env) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the launcher died before prctl
  setpgid(0, 0);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int signal : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD})
    sigaction(signal, &default_action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // the launcher blocks SIGINT and SIGTERM
  // Standard input is /dev/null: a task in a background process group that read the terminal
  // would be stopped (SIGTTIN) for good.
  dup2(in, STDIN_FILENO);
  dup2(out, STDOUT_FILENO);
  dup2(err, STDERR_FILENO);
  // No descriptor of the launcher (its sockets to the leader included) reaches the task, even
  // one that another thread opened without O_CLOEXEC a moment ago.
  close_range(3, ~0U, 0);
  execve(path, argv, env);
  static const char kFailed[] = "muster run: exec failed\n";
  (void)!write(STDERR_FILENO, kFailed, sizeof kFailed - 1);
  _exit(127);
}

}  // namespace

std::string ProcessExit::ToString() const { return ProcessExitText(exit_code, signal); }

absl::StatusOr<std::unique_ptr<TaskProcess>> TaskProcess::Start(
    const std::vector<std::string>& argv, const Environment& environment) {
  if (argv.empty()) return absl::InvalidArgumentError("no command to run");
  absl::StatusOr<std::string> path = FindProgram(argv[0]);
  if (!path.ok()) return path.status();
  std::vector<std::string> args = argv;
  std::vector<std::string> env = MergedEnvironment(environment);
  std::vector<char*> arg_pointers = Pointers(args);
  std::vector<char*> env_pointers = Pointers(env);
  int out[2];
  int err[2];
  if (pipe2(out, O_CLOEXEC) != 0)
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0) {
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    return absl::InternalError(absl::StrCat("/dev/null: ", strerror(errno)));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    Exec(parent, null, out[1], err[1], path->c_str(), arg_pointers.data(), env_pointers.data());
  }
  close(null);
  close(out[1]);
  close(err[1]);
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  }
  setpgid(pid, pid);  // also here: signals sent right after Start reach the group
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  return std::unique_ptr<TaskProcess>(new TaskProcess(pid, out[0], err[0]));
}

TaskProcess::TaskProcess(pid_t pid, int out, int err) : pid_(pid) {
  out_.fd = out;
  err_.fd = err;
}

TaskProcess::~TaskProcess() {
  if (!exit_) {
    Signal(SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  for (Stream* stream : {&out_, &err_}) {
    if (stream->fd >= 0) close(stream->fd);
  }
}

void TaskProcess::Drain(Stream& stream, bool is_stderr, const LineFn& line) {
  if (stream.fd < 0) return;
  char buffer[16384];
  for (;;) {
    ssize_t n = read(stream.fd, buffer, sizeof buffer);
    if (n > 0) {
      stream.partial.append(buffer, static_cast<size_t>(n));
      size_t start = 0;
      for (size_t nl; (nl = stream.partial.find('\n', start)) != std::string::npos;
           start = nl + 1) {
        line(absl::string_view(stream.partial).substr(start, nl - start), is_stderr);
      }
      stream.partial.erase(0, start);
      if (stream.partial.size() > kMaxLine) {  // a line without end is passed on in pieces
        line(stream.partial, is_stderr);
        stream.partial.clear();
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    // End of output: the last partial line too.
    if (!stream.partial.empty()) line(stream.partial, is_stderr);
    stream.partial.clear();
    close(stream.fd);
    stream.fd = -1;
    return;
  }
}

void TaskProcess::DrainOutput(const LineFn& line) {
  Drain(out_, false, line);
  Drain(err_, true, line);
}

std::optional<ProcessExit> TaskProcess::Poll() {
  if (exit_) return exit_;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  ProcessExit exit;
  if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
  } else {
    exit.exit_code = WEXITSTATUS(status);
  }
  exit_ = exit;
  // What the task started itself (a shell's children, data loader workers) goes with it: its
  // process group is this task's alone, and the group id is not reused while members live.
  kill(-pid_, SIGKILL);
  return exit_;
}

void TaskProcess::Signal(int signal) {
  if (kill(-pid_, signal) != 0 && !exit_) kill(pid_, signal);
}

}  // namespace muster::cli
