#include "muster/net/agent/per_process/preemption_signal.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include <absl/strings/str_cat.h>

#include "muster/messages/status/status_codec.h"

namespace muster {
namespace {

std::atomic<bool> installed{false};
// The pipe the handler writes to; -1 while no helper is installed.
std::atomic<int> write_fd{-1};
int read_fd = -1;

constexpr unsigned char kStop = 0;  // written by the destructor to end the thread

void OnSignal(int signal) {
  int saved_errno = errno;
  unsigned char byte = static_cast<unsigned char>(signal);
  int fd = write_fd.load();
  if (fd >= 0) (void)!write(fd, &byte, 1);
  errno = saved_errno;
}

}  // namespace

struct PreemptionSignalHandler::Saved {
  std::vector<struct sigaction> actions;
};

absl::StatusOr<std::unique_ptr<PreemptionSignalHandler>> PreemptionSignalHandler::Install(
    Agent& agent, absl::Duration grace, std::vector<int> signals) {
  if (signals.empty()) signals = {SIGTERM};
  for (int signal : signals) {
    if (signal <= 0 || signal > 255 || signal == SIGKILL || signal == SIGSTOP) {
      return absl::InvalidArgumentError(
          absl::StrCat("PreemptionSignalHandler: signal ", signal, " cannot be caught"));
    }
  }
  if (installed.exchange(true)) {
    return absl::FailedPreconditionError(
        "PreemptionSignalHandler: one is installed already in this process; keep one per "
        "process");
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    installed = false;
    return absl::InternalError(absl::StrCat("PreemptionSignalHandler: pipe: ", strerror(errno)));
  }
  read_fd = fds[0];
  write_fd = fds[1];
  return std::unique_ptr<PreemptionSignalHandler>(
      new PreemptionSignalHandler(agent, grace, std::move(signals)));
}

PreemptionSignalHandler::PreemptionSignalHandler(Agent& agent, absl::Duration grace,
                                                 std::vector<int> signals)
    : agent_(agent), grace_(grace), signals_(std::move(signals)), saved_(new Saved) {
  thread_ = std::thread([this] { Run(); });
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  saved_->actions.resize(signals_.size());
  for (size_t i = 0; i < signals_.size(); ++i) {
    sigaction(signals_[i], &action, &saved_->actions[i]);
  }
}

PreemptionSignalHandler::~PreemptionSignalHandler() {
  for (size_t i = 0; i < signals_.size(); ++i) {
    sigaction(signals_[i], &saved_->actions[i], nullptr);
  }
  int fd = write_fd.exchange(-1);
  (void)!write(fd, &kStop, 1);
  thread_.join();
  close(fd);
  close(read_fd);
  read_fd = -1;
  installed = false;
}

void PreemptionSignalHandler::Run() {
  unsigned char byte = 0;
  while (true) {
    ssize_t n = read(read_fd, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == kStop) return;
    int signal = byte;
    const char* name = sigabbrev_np(signal);
    auto first = agent_.NotifyPreemption(absl::Now() + grace_,
                                         absl::StrCat("signal SIG", name ? name : "?"));
    if (!first.ok()) {
      std::fprintf(stderr, "muster: could not notify the preemption after signal %d: %s\n", signal,
                   StatusText(first.status()).c_str());
    }
  }
}

}  // namespace muster
