// The process of one task, started by a launcher (`muster run`). It runs in a process group of
// its own (signals reach the programs it starts too), dies with its launcher even on kill -9
// (PR_SET_PDEATHSIG), and its output is read without blocking, line by line. Nothing here
// blocks: the launcher actor calls DrainOutput and Poll on a timer.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>

namespace muster::cli {

struct ProcessExit {
  int exit_code = -1;  // -1 when a signal killed it
  int signal = 0;      // the signal that killed it; 0 when it exited
  bool ok() const { return exit_code == 0 && signal == 0; }
  // "exited with status 3", "was killed by signal 9 (SIGKILL)".
  std::string ToString() const;
};

class TaskProcess {
 public:
  using Environment = std::vector<std::pair<std::string, std::string>>;
  // (line without its newline, true for standard error)
  using LineFn = std::function<void(absl::string_view line, bool is_stderr)>;

  // Starts `argv` (argv[0] is looked up on PATH unless it has a '/') with this process's
  // environment plus `environment` (which wins). Possible errors: NotFound (no such program),
  // Internal (pipe or fork failed).
  static absl::StatusOr<std::unique_ptr<TaskProcess>> Start(const std::vector<std::string>& argv,
                                                            const Environment& environment);

  // Kills the process group if the process still runs, and reaps it.
  ~TaskProcess();
  TaskProcess(const TaskProcess&) = delete;
  TaskProcess& operator=(const TaskProcess&) = delete;

  // Hands every complete line read so far to `line`; once both streams are closed, also the
  // last partial line of each.
  void DrainOutput(const LineFn& line);
  // The exit, once the process has exited (reaped then); nullopt while it runs.
  std::optional<ProcessExit> Poll();
  // Sends `signal` to the process group (to the process alone if the group is gone).
  void Signal(int signal);

  pid_t pid() const { return pid_; }

 private:
  struct Stream {
    int fd = -1;
    std::string partial;
  };
  TaskProcess(pid_t pid, int out, int err);
  // Reads what `stream` has without blocking; false once it is closed.
  void Drain(Stream& stream, bool is_stderr, const LineFn& line);

  pid_t pid_;
  Stream out_;
  Stream err_;
  std::optional<ProcessExit> exit_;
};

}  // namespace muster::cli
