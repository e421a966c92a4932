// A user-defined supervision policy that decides restarts: a failed worker is restarted alone
// (the others are not told) twice; the third failure restarts every task as a new round; after
// that the job fails. Failures of other jobs are propagated to everyone and restart nothing.
//
// Run:   ./build/examples/custom_supervision_policy --jobs=worker=4 --port=7400
// Then:  ./build/tools/muster run --leader 127.0.0.1:7400 --tasks 0-3 -- ./build/examples/worker
// --hold and kill workers (the launcher prints each pid): the launcher restarts what the policy
// says.
#include <cstdio>
#include <string>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/strings/str_cat.h>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/actors/supervision/supervision_policy.h"
#include "muster/messages/task_name.h"
#include "muster/net/leader/job_spec.h"
#include "muster/net/leader/leader.h"
#include "muster/net/process/shutdown_signals.h"
#include "muster/net/transport/node_config.h"

ABSL_FLAG(std::string, jobs, "worker=4", "Jobs as name=tasks, comma separated");
ABSL_FLAG(int, port, 7400, "TCP port (0: any free port)");
ABSL_FLAG(int, alone, 2, "Worker failures restarted alone before every task is restarted");

// Restarts a failed worker alone `alone` times, then every task once, then fails the job.
class RestartWorkers : public muster::SupervisionPolicy {
 public:
  explicit RestartWorkers(int alone) : alone_(alone) {}

  muster::FailureDecision OnTaskFailure(const muster::proto::CoordinatedTask& task,
                                        const absl::Status& error, absl::Time) override {
    if (task.job_name() != "worker") {
      return {muster::FailureAction::kPropagateToCluster, error};
    }
    ++failed_;
    std::printf("failure %d of %s: %s\n", failed_, muster::TaskName(task).c_str(),
                std::string(error.message()).c_str());
    std::fflush(stdout);
    if (failed_ <= alone_) {  // tell nobody; its launcher starts it again
      return {muster::FailureAction::kTolerate, error, muster::RestartScope::kTask};
    }
    if (failed_ == alone_ + 1) {  // tell everyone; every task starts again, as a new round
      return {muster::FailureAction::kPropagateToCluster, error, muster::RestartScope::kAll};
    }
    return {muster::FailureAction::kFailJob,
            absl::Status(error.code(),
                         absl::StrCat(failed_, " worker failures; last: ", error.message()))};
  }
  // While failures are restarted alone, barriers wait for the restarted worker.
  bool IsRecoverable(const muster::proto::CoordinatedTask& task) const override {
    return task.job_name() == "worker";
  }
  std::string Describe() const override {
    return absl::StrCat("restart a worker alone ", alone_, " times, then every task once");
  }

 private:
  int alone_;
  int failed_ = 0;
};

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  muster::CoordinatorOptions options;
  absl::Status jobs = muster::AddJobSpecs({absl::GetFlag(FLAGS_jobs)}, &options.config);
  if (!jobs.ok()) {
    std::fprintf(stderr, "--jobs: %s\n", std::string(jobs.message()).c_str());
    return 2;
  }
  options.policy = std::make_shared<RestartWorkers>(absl::GetFlag(FLAGS_alone));

  muster::BlockShutdownSignals();
  muster::NodeConfig cfg;
  caf::actor_system system{cfg};
  auto leader = muster::Leader::Start(system, options,
                                      {.port = static_cast<uint16_t>(absl::GetFlag(FLAGS_port))});
  if (!leader.ok()) {
    std::fprintf(stderr, "%s\n", leader.status().ToString().c_str());
    return 1;
  }
  std::printf("leader with policy \"%s\" ready at %s\n", options.policy->Describe().c_str(),
              (*leader)->address().c_str());
  std::fflush(stdout);
  muster::WaitForShutdownSignal();
  return 0;  // ~Leader stops the coordinator
}
