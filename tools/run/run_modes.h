// The ways `muster run` runs (internal to tools/run): hosting the leader, joining one, and one
// launcher per node of a Slurm step (run_in_step.cc), which hosts or joins.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "muster/net/launcher/launcher_actor.h"
#include "muster/net/process/cluster/cluster_environment.h"
#include "muster/proto/coordination_config.pb.h"

namespace muster::cli {

// Every task of `config`'s jobs, in their order (RANK order).
std::vector<proto::CoordinatedTask> AllTasks(const proto::CoordinationServiceConfig& config);

// Hosts the leader and runs `tasks` (empty: every task); `published`: the leader's address as
// the tasks reach it (default: the one it listens on). Returns the exit code.
int Host(LauncherConfig config, const std::string& tasks, const std::string& published = "");

// Joins the leader of --leader and runs `tasks`; `in_step`: every launcher of a Slurm step has
// the same command line, so --restart (the host's) is no usage error here.
int Join(LauncherConfig config, const std::string& tasks, bool in_step = false);

// One launcher per node of a Slurm step: the first node's hosts the leader, each runs its share.
// `given`: the flags set on the command line.
int RunInStep(LauncherConfig config, const SlurmStep& step, const std::set<std::string>& given);

}  // namespace muster::cli
