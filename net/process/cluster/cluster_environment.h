// Where this process runs: its task and its leader, as the launcher or cluster scheduler that
// started it says, the way jax.distributed.initialize() detects them. Sources, innermost
// launcher first (the first one present decides):
//
//   muster run     MUSTER_LEADER, MUSTER_JOB, MUSTER_TASK (MUSTER_GENERATION, MUSTER_ROUND)
//   torchrun       TORCHELASTIC_RUN_ID with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
//   Open MPI       OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK/_LOCAL_SIZE (mpirun's host from
//                  OMPI_MCA_orte_hnp_uri); PMIx (PMIX_RANK) and MPICH/Intel MPI (PMI_RANK,
//                  PMI_SIZE) likewise
//   Slurm          a task of an srun step: SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID,
//                  SLURM_NODEID, the step's node list (its first node hosts the leader); not a
//                  batch script itself
//   Kubernetes     JOB_COMPLETION_INDEX of an indexed Job (or a JobSet's), the size from
//                  MUSTER_WORLD_SIZE or WORLD_SIZE, the leader at the host name of index 0
//
// Launchers nest (torchrun or mpirun inside a Slurm allocation, anything inside a pod), so an
// outer source that disagrees is not wrong. Sources that describe the same launch and disagree
// are an error naming both: MPI's variables among themselves, Slurm and MPI when srun started
// the MPI ranks (the same number of tasks), a Job's index and its pod's host name, and
// MUSTER_WORLD_SIZE against what a launcher says.
//
// Overrides: MUSTER_LEADER (HOST:PORT, or an HA job's list or etcd:// URL) names the leader;
// MUSTER_PORT the leader's port where only its host is detected (default 7400); MUSTER_JOB the job
// (default "worker").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>

#include "muster/net/process/launch_environment.h"

namespace muster {

inline constexpr int kDefaultClusterLeaderPort = 7400;

struct ClusterPlacement {
  std::string source;    // "muster run", "torchrun", "Open MPI", "PMIx", "MPICH", "Slurm", ...
  std::string evidence;  // the variables it came from: "SLURM_PROCID=3 SLURM_NTASKS=8"
  std::string leader;    // HOST:PORT
  std::string job = "worker";
  int task_id = 0;
  int num_tasks = 0;  // the job's size; 0: not known (muster run: the leader knows)
  int local_task = 0;
  int num_local_tasks = 0;  // 0: not known
  int node = 0;             // which launcher or host this is (Slurm: SLURM_NODEID)
  int num_nodes = 0;        // 0: not known
  int64_t generation = 0;   // muster run
  int64_t round = 0;        // muster run
};

// "HOST:PORT", with an IPv6 host in brackets (once).
std::string HostPort(const std::string& host, int port);

// One line for a log: "Slurm (SLURM_PROCID=3 ...): /job:worker/task:3 of 8, local 1 of 4,
// leader node01:7400".
std::string PlacementText(const ClusterPlacement& placement);

// The placement the environment describes; nullopt when no source is present. `host_name` is
// this host's fully qualified name (Kubernetes: the pod's, naming its headless service).
// Possible errors: InvalidArgument naming the variables at fault: a malformed value, a rank
// outside its size, sources that disagree (naming both), a leader that cannot be derived (what
// to set); FailedPrecondition in a spare of `muster run --spares` that has no task yet.
absl::StatusOr<std::optional<ClusterPlacement>> DetectCluster(const EnvironmentLookup& env,
                                                              absl::string_view host_name);

// DetectCluster over this process's environment and host name.
absl::StatusOr<std::optional<ClusterPlacement>> DetectClusterFromEnvironment();

// The launchers of a Slurm step (`srun muster run ...`), one per node: this one's index, how
// many, and the step's first node, which hosts the leader; nullopt outside an srun step.
// Possible errors: InvalidArgument (malformed Slurm variables; several tasks on a node).
struct SlurmStep {
  int launcher = 0;  // SLURM_NODEID: launcher 0 runs on the step's first node
  int num_launchers = 1;
  std::string first_node;
  std::string evidence;
};
absl::StatusOr<std::optional<SlurmStep>> DetectSlurmStep(const EnvironmentLookup& env);

// Slurm's compressed host lists: "node[01-03,07],gpu-a[1-2]" -> node01 node02 node03 node07
// gpu-a1 gpu-a2. Possible errors: InvalidArgument (unbalanced brackets, a bad range, more than
// `limit` hosts).
absl::StatusOr<std::vector<std::string>> ExpandSlurmHostList(absl::string_view list,
                                                             size_t limit = 100'000);

// The first host of such a list, without expanding the rest. Possible errors: InvalidArgument.
absl::StatusOr<std::string> FirstSlurmHost(absl::string_view list);

// Slurm's tasks per node, "2(x3),1" -> 2 2 2 1. Possible errors: InvalidArgument.
absl::StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(absl::string_view list,
                                                         size_t limit = 100'000);

}  // namespace muster
