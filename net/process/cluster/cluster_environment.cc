#include "muster/net/process/cluster/cluster_environment.h"

#include <netdb.h>
#include <unistd.h>

#include <cstdlib>

#include <absl/strings/ascii.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>

#include "muster/net/process/cluster/cluster_sources.h"
#include "muster/net/process/launch_environment.h"

namespace muster {
namespace {

using cluster_internal::Detected;
using cluster_internal::Found;
using cluster_internal::FromKubernetes;
using cluster_internal::FromMpich;
using cluster_internal::FromMusterRun;
using cluster_internal::FromOpenMpi;
using cluster_internal::FromPmix;
using cluster_internal::FromSlurm;
using cluster_internal::FromTorchEnv;
using cluster_internal::FromTorchrun;

absl::Status Disagree(const Found& a, const Found& b, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(a.placement.source, " and ", b.placement.source, " disagree on this process's ",
                   what, ": ", what == "rank" ? a.rank_variable : a.size_variable, " but ",
                   what == "rank" ? b.rank_variable : b.size_variable,
                   "; unset the variables of the launcher that did not start it"));
}

// MPI's sources, innermost first: Open MPI (which sets PMIX_RANK too, for the same process, so
// the two must agree), MPICH's Hydra (inside it an outer srun --mpi=pmix's PMIX_RANK is stale),
// then PMIx alone (srun --mpi=pmix, prterun).
absl::StatusOr<std::optional<Found>> Mpi(const EnvironmentLookup& env) {
  Detected open_mpi = FromOpenMpi(env);
  if (!open_mpi.ok() || !*open_mpi) {
    if (!open_mpi.ok()) return open_mpi.status();
    Detected mpich = FromMpich(env);
    if (!mpich.ok() || *mpich) return mpich;
    return FromPmix(env);
  }
  Detected pmix = FromPmix(env);
  if (!pmix.ok()) return pmix.status();
  if (*pmix && (*pmix)->placement.task_id != (*open_mpi)->placement.task_id) {
    return Disagree(**open_mpi, **pmix, "rank");
  }
  return open_mpi;
}

// `mpi` inside a Slurm step: the same launch when srun started the ranks itself (no mpirun's
// variables, as many tasks, the same place on the node); then the two must agree, and Slurm says
// what MPI leaves out. Otherwise mpirun runs inside the allocation, and decides alone.
absl::Status MergeSlurm(const EnvironmentLookup& env, const Found& slurm, Found& mpi) {
  ClusterPlacement& m = mpi.placement;
  const ClusterPlacement& s = slurm.placement;
  const bool mpirun = env("OMPI_MCA_orte_hnp_uri") || env("PMI_PORT");
  if (mpirun || (m.num_tasks != 0 && m.num_tasks != s.num_tasks) ||
      (m.num_local_tasks != 0 && m.local_task != s.local_task)) {
    return absl::OkStatus();
  }
  if (m.task_id != s.task_id) return Disagree(slurm, mpi, "rank");
  if (m.num_tasks == 0) {
    m.num_tasks = s.num_tasks;
    mpi.size_variable = slurm.size_variable;
  }
  if (mpi.leader_host.empty()) mpi.leader_host = slurm.leader_host;
  if (m.num_local_tasks == 0) {
    m.local_task = s.local_task;
    m.num_local_tasks = s.num_local_tasks;
  }
  m.node = s.node;
  m.num_nodes = s.num_nodes;
  absl::StrAppend(&m.evidence, " ", s.evidence);
  return absl::OkStatus();
}

// The innermost launcher's view; nullopt when there is none. RANK and WORLD_SIZE beside a Slurm
// task or a pod that they contradict were set by something inside it: an error naming both.
absl::StatusOr<std::optional<Found>> Innermost(const EnvironmentLookup& env,
                                               absl::string_view host_name) {
  for (auto detect : {FromMusterRun, FromTorchrun}) {
    Detected found = detect(env);
    if (!found.ok() || *found) return found;
  }
  Detected slurm = FromSlurm(env);
  if (!slurm.ok()) return slurm.status();
  absl::StatusOr<std::optional<Found>> mpi = Mpi(env);
  if (!mpi.ok()) return mpi.status();
  if (*mpi) {
    if (*slurm) {
      if (absl::Status s = MergeSlurm(env, **slurm, **mpi); !s.ok()) return s;
    }
    return mpi;
  }
  std::optional<Found> outer = *std::move(slurm);
  if (!outer) {
    Detected pod = FromKubernetes(env, host_name);
    if (!pod.ok()) return pod.status();
    outer = *std::move(pod);
  }
  Detected torch = FromTorchEnv(env);
  if (!torch.ok()) return torch.status();
  if (outer && *torch &&
      ((*torch)->placement.task_id != outer->placement.task_id ||
       (*torch)->placement.num_tasks != outer->placement.num_tasks)) {
    return Disagree(
        *outer, **torch,
        (*torch)->placement.task_id != outer->placement.task_id ? "rank" : "world size");
  }
  if (outer) return outer;
  return torch;
}

absl::StatusOr<int> SizeVariable(absl::string_view text) {
  int size = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &size) || size < 1 || size > 1'000'000) {
    return absl::InvalidArgumentError(absl::StrCat("MUSTER_WORLD_SIZE=\"", text.substr(0, 40),
                                                   "\" is not a positive number up to 1000000"));
  }
  return size;
}

}  // namespace

std::string HostPort(const std::string& host, int port) {
  const bool bare_ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return bare_ipv6 ? absl::StrCat("[", host, "]:", port) : absl::StrCat(host, ":", port);
}

std::string PlacementText(const ClusterPlacement& p) {
  std::string text =
      absl::StrCat(p.source, " (", p.evidence, "): /job:", p.job, "/task:", p.task_id);
  if (p.num_tasks > 0) absl::StrAppend(&text, " of ", p.num_tasks);
  if (p.num_local_tasks > 0) {
    absl::StrAppend(&text, ", local ", p.local_task, " of ", p.num_local_tasks);
  }
  if (p.num_nodes > 0) absl::StrAppend(&text, ", node ", p.node, " of ", p.num_nodes);
  absl::StrAppend(&text, ", leader ", p.leader);
  return text;
}

absl::StatusOr<std::optional<ClusterPlacement>> DetectCluster(const EnvironmentLookup& env,
                                                              absl::string_view host_name) {
  if (absl::Status s = NotASpare(env(kSpareEnv).has_value()); !s.ok()) return s;
  absl::StatusOr<std::optional<Found>> innermost = Innermost(env, host_name);
  if (!innermost.ok()) return innermost.status();
  if (!*innermost) return std::nullopt;
  Found& chosen = **innermost;
  ClusterPlacement& p = chosen.placement;
  if (p.source == "muster run") return p;  // its launcher's leader knows the job's size
  if (std::optional<std::string> text = env("MUSTER_WORLD_SIZE")) {
    absl::StatusOr<int> size = SizeVariable(*text);
    if (!size.ok()) return size.status();
    if (p.num_tasks == 0) {
      p.num_tasks = *size;
      chosen.size_variable = absl::StrCat("MUSTER_WORLD_SIZE=", *size);
      absl::StrAppend(&p.evidence, " ", chosen.size_variable);
      if (p.task_id >= p.num_tasks) {
        return absl::InvalidArgumentError(absl::StrCat(p.source, ": ", chosen.rank_variable,
                                                       " is not below ", chosen.size_variable));
      }
    } else if (*size != p.num_tasks) {
      return absl::InvalidArgumentError(
          absl::StrCat("MUSTER_WORLD_SIZE=", *size, " and ", p.source,
                       " disagree on the job's size: ", chosen.size_variable));
    }
  }
  if (p.num_tasks == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(p.source, " (", p.evidence,
                     ") does not say how many tasks the job has: set MUSTER_WORLD_SIZE"));
  }
  if (std::optional<std::string> job = env("MUSTER_JOB"); job && !job->empty()) p.job = *job;
  if (std::optional<std::string> leader = env("MUSTER_LEADER"); leader && !leader->empty()) {
    p.leader = *leader;
    absl::StrAppend(&p.evidence, " MUSTER_LEADER=", leader->substr(0, 120));
    return p;
  }
  if (std::optional<std::string> master = env("MASTER_ADDR");
      chosen.leader_host.empty() && master && !master->empty()) {
    chosen.leader_host = *master;
    absl::StrAppend(&p.evidence, " MASTER_ADDR=", master->substr(0, 120));
  }
  if (chosen.leader_host.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(p.source, " (", p.evidence,
                     ") does not say which host runs the leader: set MUSTER_LEADER=HOST:PORT (or "
                     "MASTER_ADDR, the host of task 0)"));
  }
  int port = kDefaultClusterLeaderPort;
  if (std::optional<std::string> text = env("MUSTER_PORT")) {
    if (!absl::SimpleAtoi(*text, &port) || port < 1 || port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("MUSTER_PORT=\"", text->substr(0, 40), "\" is not a port (1-65535)"));
    }
    absl::StrAppend(&p.evidence, " MUSTER_PORT=", port);
  }
  p.leader = HostPort(chosen.leader_host, port);
  return p;
}

absl::StatusOr<std::optional<ClusterPlacement>> DetectClusterFromEnvironment() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
  std::string host = name;
  // A pod's fully qualified name (name.subdomain.namespace.svc...) is its canonical one.
  addrinfo hints{};
  hints.ai_flags = AI_CANONNAME;
  addrinfo* info = nullptr;
  if (!host.empty() && std::getenv("JOB_COMPLETION_INDEX") != nullptr &&
      getaddrinfo(host.c_str(), nullptr, &hints, &info) == 0) {
    if (info != nullptr && info->ai_canonname != nullptr) host = info->ai_canonname;
    freeaddrinfo(info);
  }
  return DetectCluster(ProcessEnvironment(), host);
}

absl::StatusOr<std::optional<SlurmStep>> DetectSlurmStep(const EnvironmentLookup& env) {
  Detected slurm = FromSlurm(env);
  if (!slurm.ok()) return slurm.status();
  if (!*slurm) return std::nullopt;
  if ((*slurm)->leader_host.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Slurm (", (*slurm)->placement.evidence,
        ") names no node list (SLURM_STEP_NODELIST or SLURM_JOB_NODELIST) for the leader"));
  }
  const ClusterPlacement& p = (*slurm)->placement;
  if (p.num_nodes != p.num_tasks || p.num_local_tasks > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Slurm (", p.evidence, ") runs ", p.num_tasks, " launchers on ", p.num_nodes,
        " node(s): run one muster run per node (srun --ntasks-per-node=1); it starts the node's "
        "tasks itself"));
  }
  return SlurmStep{.launcher = p.node,
                   .num_launchers = p.num_tasks,
                   .first_node = (*slurm)->leader_host,
                   .evidence = p.evidence};
}

}  // namespace muster
