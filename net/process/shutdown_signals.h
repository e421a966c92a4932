// Shutdown signals (SIGINT, SIGTERM) of Muster processes: blocked in every thread so that they
// never kill a process midway, then awaited in one place: by the main thread
// (WaitForShutdownSignal) or by a forwarder thread that turns the signal into a message.
#pragma once

#include <atomic>
#include <thread>

#include <caf/actor.hpp>
#include <caf/atom.hpp>

namespace muster {

// (shutdown_atom, int signal): a shutdown signal arrived.
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;

// Blocks SIGINT and SIGTERM in the calling thread. Call it at the start of main(), before the
// actor system starts its threads: they inherit the mask.
void BlockShutdownSignals();

// Waits until SIGINT or SIGTERM arrives (both must be blocked) and returns its number.
int WaitForShutdownSignal();

// Forwards the first SIGINT or SIGTERM to `receiver` as (shutdown_atom, signal), from a thread
// of its own; a second one ends the process at once with 128 + signal (a shutdown that hangs
// can still be interrupted). Both signals must be blocked. The destructor stops the thread.
class ShutdownSignalForwarder {
 public:
  explicit ShutdownSignalForwarder(caf::actor receiver);
  ~ShutdownSignalForwarder();
  ShutdownSignalForwarder(const ShutdownSignalForwarder&) = delete;
  ShutdownSignalForwarder& operator=(const ShutdownSignalForwarder&) = delete;

 private:
  void Run(caf::actor receiver);

  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace muster
