// A user-defined supervision policy: tolerate up to two failed workers, then fail the job.
//
// Run:   ./build/examples/custom_supervision_policy --jobs=worker=4 --port=7400
// Then start workers (./build/examples/worker ...) and kill some: the first two failures are
// tolerated; the third fails every worker and is reported to the whole cluster.
#include <cstdio>
#include <string>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/strings/str_cat.h>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>

#include "muster/actors/coordinator_actor.h"
#include "muster/actors/supervision/supervision_policy.h"
#include "muster/messages/task_name.h"
#include "muster/net/job_spec.h"
#include "muster/net/leader.h"
#include "muster/net/node_config.h"
#include "muster/net/shutdown_signals.h"

ABSL_FLAG(std::string, jobs, "worker=4", "Jobs as name=tasks, comma separated");
ABSL_FLAG(int, port, 7400, "TCP port (0: any free port)");
ABSL_FLAG(int, tolerated, 2, "Failed workers tolerated before the job fails");

// Tolerates `tolerated` failed tasks of the "worker" job; the next failure fails the job.
class TolerateSomeWorkers : public muster::SupervisionPolicy {
 public:
  explicit TolerateSomeWorkers(int tolerated) : tolerated_(tolerated) {}

  muster::FailureDecision OnTaskFailure(const muster::proto::CoordinatedTask& task,
                                        const absl::Status& error, absl::Time) override {
    if (task.job_name() != "worker") {
      return {muster::FailureAction::kPropagateToCluster, error};
    }
    if (++failed_ <= tolerated_) {
      std::printf("tolerating failure %d/%d of %s\n", failed_, tolerated_,
                  muster::TaskName(task).c_str());
      return {muster::FailureAction::kTolerate, error};
    }
    return {muster::FailureAction::kFailJob,
            absl::Status(error.code(), absl::StrCat("more than ", tolerated_,
                                                    " workers failed; last: ", error.message()))};
  }
  bool IsRecoverable(const muster::proto::CoordinatedTask& task) const override {
    return task.job_name() == "worker" && failed_ < tolerated_;
  }
  std::string Describe() const override {
    return absl::StrCat("tolerate ", tolerated_, " failed workers");
  }

 private:
  int tolerated_;
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
  options.policy = std::make_shared<TolerateSomeWorkers>(absl::GetFlag(FLAGS_tolerated));

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
