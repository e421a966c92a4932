#include "muster/net/process/shutdown_signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include <caf/send.hpp>

namespace muster {
namespace {

sigset_t ShutdownSignalSet() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  return signals;
}

}  // namespace

void BlockShutdownSignals() {
  sigset_t signals = ShutdownSignalSet();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

int WaitForShutdownSignal() {
  sigset_t signals = ShutdownSignalSet();
  int received = 0;
  while (sigwait(&signals, &received) != 0) {
  }
  return received;
}

ShutdownSignalForwarder::ShutdownSignalForwarder(caf::actor receiver)
    : thread_([this, receiver = std::move(receiver)] { Run(receiver); }) {}

ShutdownSignalForwarder::~ShutdownSignalForwarder() {
  stopping_ = true;
  // Wakes the thread: the signal is blocked, so it only ends its sigwait.
  pthread_kill(thread_.native_handle(), SIGTERM);
  thread_.join();
}

void ShutdownSignalForwarder::Run(caf::actor receiver) {
  bool forwarded = false;
  while (true) {
    int received = WaitForShutdownSignal();
    if (stopping_) return;
    if (forwarded) {
      std::fprintf(stderr, "second signal %d: exiting at once\n", received);
      _exit(128 + received);
    }
    caf::anon_send(receiver, shutdown_atom::value, received);
    forwarded = true;
  }
}

}  // namespace muster
