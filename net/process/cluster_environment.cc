#include "muster/net/process/cluster_environment.h"

#include <netdb.h>
#include <unistd.h>

#include <cstdlib>

#include <absl/strings/ascii.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>

#include "muster/net/process/cluster_sources.h"

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

// Sources of one launch must agree; returns the one that decides.
absl::StatusOr<std::optional<Found>> SettleMpi(std::vector<Found> mpi) {
  if (mpi.empty()) return std::nullopt;
  for (size_t i = 1; i < mpi.size(); ++i) {
    if (mpi[i].placement.task_id != mpi[0].placement.task_id) {
      return Disagree(mpi[0], mpi[i], "rank");
    }
    if (mpi[i].placement.num_tasks != 0 && mpi[0].placement.num_tasks != 0 &&
        mpi[i].placement.num_tasks != mpi[0].placement.num_tasks) {
      return Disagree(mpi[0], mpi[i], "world size");
    }
  }
  return mpi[0];
}

}  // namespace

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
  std::vector<Found> mpi;
  for (auto detect : {FromOpenMpi, FromMpich, FromPmix}) {
    Detected found = detect(env);
    if (!found.ok()) return found.status();
    if (*found) mpi.push_back(**std::move(found));
  }
  Detected slurm = FromSlurm(env);
  if (!slurm.ok()) return slurm.status();
  auto settled = SettleMpi(std::move(mpi));
  if (!settled.ok()) return settled.status();
  std::optional<Found> chosen;
  for (auto detect : {FromMusterRun, FromTorchrun}) {
    Detected found = detect(env);
    if (!found.ok()) return found.status();
    if (*found) {
      chosen = **std::move(found);
      break;
    }
  }
  if (!chosen && *settled) {
    chosen = **settled;
    Found& m = *chosen;
    // srun started the MPI ranks (the same number of tasks): the same launch, so Slurm agrees,
    // and says what MPI leaves out. Otherwise mpirun runs inside a Slurm allocation.
    const bool srun_started = *slurm && (m.placement.num_tasks == 0 ||
                                         m.placement.num_tasks == (*slurm)->placement.num_tasks);
    if (srun_started) {
      if (m.placement.task_id != (*slurm)->placement.task_id) {
        return Disagree(**slurm, m, "rank");
      }
      if (m.placement.num_tasks == 0) {
        m.placement.num_tasks = (*slurm)->placement.num_tasks;
        m.size_variable = (*slurm)->size_variable;
      }
      if (m.leader_host.empty()) m.leader_host = (*slurm)->leader_host;
      if (m.placement.num_local_tasks == 0) {
        m.placement.local_task = (*slurm)->placement.local_task;
        m.placement.num_local_tasks = (*slurm)->placement.num_local_tasks;
      }
      m.placement.node = (*slurm)->placement.node;
      m.placement.num_nodes = (*slurm)->placement.num_nodes;
      absl::StrAppend(&m.placement.evidence, " ", (*slurm)->placement.evidence);
    }
  }
  if (!chosen && *slurm) chosen = **std::move(slurm);
  if (!chosen) {
    Detected found = FromKubernetes(env, host_name);
    if (!found.ok()) return found.status();
    if (*found) chosen = **std::move(found);
  }
  if (!chosen) {
    Detected found = FromTorchEnv(env);
    if (!found.ok()) return found.status();
    if (*found) chosen = **std::move(found);
  }
  if (!chosen) return std::nullopt;
  ClusterPlacement& p = chosen->placement;
  if (p.num_tasks == 0 && p.source != "muster run") {
    return absl::InvalidArgumentError(absl::StrCat(p.source, " (", p.evidence,
                                                   ") does not say how many tasks the job has: set "
                                                   "MUSTER_WORLD_SIZE"));
  }
  if (std::optional<std::string> size = env("MUSTER_WORLD_SIZE");
      size && p.num_tasks != 0 && p.source != "Kubernetes") {
    if (*size != absl::StrCat(p.num_tasks)) {
      return absl::InvalidArgumentError(
          absl::StrCat("MUSTER_WORLD_SIZE=", size->substr(0, 40), " and ", p.source,
                       " disagree on the job's size: ", chosen->size_variable));
    }
  }
  if (p.source == "muster run") return p;
  if (std::optional<std::string> job = env("MUSTER_JOB"); job && !job->empty()) p.job = *job;
  if (std::optional<std::string> leader = env("MUSTER_LEADER"); leader && !leader->empty()) {
    p.leader = *leader;
    absl::StrAppend(&p.evidence, " MUSTER_LEADER=", *leader);
    return p;
  }
  if (std::optional<std::string> master = env("MASTER_ADDR");
      chosen->leader_host.empty() && master && !master->empty()) {
    chosen->leader_host = *master;
    absl::StrAppend(&p.evidence, " MASTER_ADDR=", master->substr(0, 120));
  }
  if (chosen->leader_host.empty()) {
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
  const bool ipv6 = chosen->leader_host.find(':') != std::string::npos;
  p.leader = ipv6 ? absl::StrCat("[", chosen->leader_host, "]:", port)
                  : absl::StrCat(chosen->leader_host, ":", port);
  return p;
}

EnvironmentLookup ProcessEnvironment() {
  return [](absl::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
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
  return SlurmStep{.launcher = (*slurm)->placement.task_id,
                   .num_launchers = (*slurm)->placement.num_tasks,
                   .first_node = (*slurm)->leader_host,
                   .evidence = (*slurm)->placement.evidence};
}

}  // namespace muster
