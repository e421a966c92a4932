// Turns a signal into a preemption notice: a SIGTERM from the cluster manager (or any signal
// chosen) makes the agent call NotifyPreemption, with the preemption due `grace` after the
// signal. The handler only writes the signal's number to a pipe (async-signal-safe); a thread
// of the helper reads it and makes the call, so the training thread is never interrupted in an
// Agent method. One helper per process; its destructor restores the previous handlers.
//
//   INSTALLED --signal--> NotifyPreemption(now + grace, "signal SIGTERM") --> INSTALLED
//       +--destructor--> previous handlers restored, thread stopped
#pragma once

#include <memory>
#include <thread>
#include <vector>

#include <absl/status/statusor.h>
#include <absl/time/time.h>

#include "muster/net/agent/agent.h"

namespace muster {

class PreemptionSignalHandler {
 public:
  // Installs handlers for `signals` (SIGTERM by default). `agent` must outlive the helper.
  // Possible errors: FailedPrecondition (a helper exists already in this process),
  // InvalidArgument (no signals, or one that cannot be caught), Internal (pipe or sigaction).
  static absl::StatusOr<std::unique_ptr<PreemptionSignalHandler>> Install(
      Agent& agent, absl::Duration grace = absl::Seconds(30), std::vector<int> signals = {});
  ~PreemptionSignalHandler();
  PreemptionSignalHandler(const PreemptionSignalHandler&) = delete;
  PreemptionSignalHandler& operator=(const PreemptionSignalHandler&) = delete;

 private:
  struct Saved;
  PreemptionSignalHandler(Agent& agent, absl::Duration grace, std::vector<int> signals);
  void Run();

  Agent& agent_;
  absl::Duration grace_;
  std::vector<int> signals_;
  std::unique_ptr<Saved> saved_;
  std::thread thread_;
};

}  // namespace muster
