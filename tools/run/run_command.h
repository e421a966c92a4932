// `muster run`: runs a job's task processes and restarts what fails. It hosts the leader in its
// own process (or joins one with --leader), starts one process of CMD per task of this host with
// the task's identity in its environment (net/launcher/launcher_actor.h), prefixes their output
// with the task's name, and exits with the job's status. The leader's supervision policy decides
// restarts: --restart one-for-all | one-for-one | none, at most --max-restarts within
// --restart-window. Under srun (a Slurm step, one launcher per node) the launchers share the
// tasks without further flags: the step's first node hosts the leader.
#pragma once

#include <string>
#include <vector>

#include <absl/status/statusor.h>

#include "muster/proto/coordination_config.pb.h"
#include "muster/proto/coordination_service.pb.h"
#include "muster/tools/common/command_line.h"

namespace muster::cli {

const CommandSpec& RunSpec();

// Parses --tasks: comma-separated task ids and ranges ("0-3,6"), each optionally behind a job
// name ("ps:0-1"); a bare range belongs to `default_job`. Possible errors: InvalidArgument
// naming the part at fault.
absl::StatusOr<std::vector<proto::CoordinatedTask>> ParseTaskList(const std::string& text,
                                                                  const std::string& default_job);

// Under srun (one launcher per node), the --tasks list of launcher `launcher` of `launchers`:
// the tasks of `config`'s jobs in order, in contiguous shares whose sizes differ by at most one
// ("worker:0-3,ps:0"). Possible errors: InvalidArgument (fewer tasks than launchers).
absl::StatusOr<std::string> StepShare(const proto::CoordinationServiceConfig& config, int launcher,
                                      int launchers);

// Runs `muster run` with the arguments that follow "run"; returns the exit code.
int RunRun(const std::vector<std::string>& argv);

}  // namespace muster::cli
