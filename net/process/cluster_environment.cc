#include "muster/net/process/cluster_environment.h"

#include <netdb.h>
#include <unistd.h>

#include <cstdlib>

#include <absl/strings/ascii.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>

namespace muster {
namespace {

constexpr int kMaxTasks = 1'000'000;

// A source's placement, before the leader is settled.
struct Found {
  ClusterPlacement placement;
  std::string leader_host;  // empty: this source does not say
  std::string rank_variable;
  std::string size_variable;
};

// The variables a source reads, and what it read, for its evidence and its errors.
class Reader {
 public:
  explicit Reader(const EnvironmentLookup& env) : env_(env) {}

  std::optional<std::string> Text(absl::string_view name) {
    std::optional<std::string> value = env_(name);
    if (value) evidence_.push_back(absl::StrCat(name, "=", value->substr(0, 120)));
    return value;
  }

  // A number in [0, kMaxTasks] (sizes: [1, kMaxTasks]); nullopt when unset.
  absl::StatusOr<std::optional<int>> Number(absl::string_view name, bool size = false) {
    std::optional<std::string> text = Text(name);
    if (!text) return std::nullopt;
    int value = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &value) || value < (size ? 1 : 0) ||
        value > kMaxTasks) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "=\"", text->substr(0, 40), "\" is not a ",
                       size ? "positive" : "non-negative", " number up to ", kMaxTasks));
    }
    return value;
  }

  // The first of `names` that is set.
  absl::StatusOr<std::optional<int>> FirstNumber(std::initializer_list<absl::string_view> names,
                                                 bool size, std::string* which) {
    for (absl::string_view name : names) {
      if (!env_(name)) continue;
      *which = std::string(name);
      return Number(name, size);
    }
    return std::nullopt;
  }

  std::string Evidence() const { return absl::StrJoin(evidence_, " "); }

 private:
  const EnvironmentLookup& env_;
  std::vector<std::string> evidence_;
};

#define MUSTER_ASSIGN_OR_RETURN_NUMBER(lhs, expr) \
  auto lhs = (expr);                              \
  if (!lhs.ok()) return lhs.status()

using Detected = absl::StatusOr<std::optional<Found>>;

// Fills a Found from a rank and a size variable (the size may be missing: 0).
Detected Make(absl::string_view source, absl::string_view rank_name, std::optional<int> rank,
              absl::string_view size_name, std::optional<int> size) {
  Found found;
  found.placement.source = std::string(source);
  found.rank_variable = absl::StrCat(rank_name, "=", *rank);
  found.placement.task_id = *rank;
  if (size) {
    found.size_variable = absl::StrCat(size_name, "=", *size);
    found.placement.num_tasks = *size;
    if (*rank >= *size) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": ", found.rank_variable, " is not below ", found.size_variable));
    }
  }
  return found;
}

Detected FromMusterRun(const EnvironmentLookup& env) {
  if (!env("MUSTER_LEADER") || !env("MUSTER_JOB") || !env("MUSTER_TASK")) return std::nullopt;
  Reader reader(env);
  std::string leader = *reader.Text("MUSTER_LEADER"), job = *reader.Text("MUSTER_JOB");
  MUSTER_ASSIGN_OR_RETURN_NUMBER(task, reader.Number("MUSTER_TASK"));
  if (leader.empty() || job.empty()) {
    return absl::InvalidArgumentError("MUSTER_LEADER and MUSTER_JOB must not be empty");
  }
  Found found;
  found.placement.source = "muster run";
  found.placement.leader = leader;
  found.placement.job = job;
  found.placement.task_id = **task;
  found.rank_variable = absl::StrCat("MUSTER_TASK=", **task);
  for (auto [name, out] : {std::pair{"MUSTER_GENERATION", &found.placement.generation},
                           {"MUSTER_ROUND", &found.placement.round}}) {
    std::optional<std::string> text = reader.Text(name);
    if (text && (!absl::SimpleAtoi(*text, out) || *out < 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "=\"", text->substr(0, 40), "\" is not a non-negative number"));
    }
  }
  // muster run's RANK counts the tasks of every job; its WORLD_SIZE is theirs, not the job's.
  MUSTER_ASSIGN_OR_RETURN_NUMBER(local, reader.Number("LOCAL_RANK"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(locals, reader.Number("LOCAL_WORLD_SIZE", true));
  found.placement.local_task = local->value_or(0);
  found.placement.num_local_tasks = locals->value_or(0);
  found.placement.evidence = reader.Evidence();
  return found;
}

Detected FromTorchrun(const EnvironmentLookup& env) {
  if (!env("TORCHELASTIC_RUN_ID") || !env("RANK")) return std::nullopt;
  Reader reader(env);
  MUSTER_ASSIGN_OR_RETURN_NUMBER(rank, reader.Number("RANK"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(size, reader.Number("WORLD_SIZE", true));
  if (!*size) return absl::InvalidArgumentError("torchrun: RANK is set but WORLD_SIZE is not");
  auto found = Make("torchrun", "RANK", *rank, "WORLD_SIZE", *size);
  if (!found.ok()) return found;
  MUSTER_ASSIGN_OR_RETURN_NUMBER(local, reader.Number("LOCAL_RANK"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(locals, reader.Number("LOCAL_WORLD_SIZE", true));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(node, reader.Number("GROUP_RANK"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(nodes, reader.Number("GROUP_WORLD_SIZE", true));
  ClusterPlacement& p = (*found)->placement;
  p.local_task = local->value_or(0);
  p.num_local_tasks = locals->value_or(0);
  p.node = node->value_or(0);
  p.num_nodes = nodes->value_or(0);
  (*found)->leader_host = reader.Text("MASTER_ADDR").value_or("");
  p.evidence = reader.Evidence();
  return found;
}

// mpirun's own host, from "4006936576.0;tcp://10.0.0.1,172.17.0.1:40573".
std::string HostOfHnpUri(absl::string_view uri) {
  size_t at = uri.find("://");
  if (at == absl::string_view::npos) return "";
  absl::string_view rest = uri.substr(at + 3);
  return std::string(rest.substr(0, rest.find_first_of(",:;")));
}

Detected FromOpenMpi(const EnvironmentLookup& env) {
  if (!env("OMPI_COMM_WORLD_RANK")) return std::nullopt;
  Reader reader(env);
  MUSTER_ASSIGN_OR_RETURN_NUMBER(rank, reader.Number("OMPI_COMM_WORLD_RANK"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(size, reader.Number("OMPI_COMM_WORLD_SIZE", true));
  auto found = Make("Open MPI", "OMPI_COMM_WORLD_RANK", *rank, "OMPI_COMM_WORLD_SIZE", *size);
  if (!found.ok()) return found;
  MUSTER_ASSIGN_OR_RETURN_NUMBER(local, reader.Number("OMPI_COMM_WORLD_LOCAL_RANK"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(locals, reader.Number("OMPI_COMM_WORLD_LOCAL_SIZE", true));
  (*found)->placement.local_task = local->value_or(0);
  (*found)->placement.num_local_tasks = locals->value_or(0);
  if (auto uri = reader.Text("OMPI_MCA_orte_hnp_uri")) (*found)->leader_host = HostOfHnpUri(*uri);
  (*found)->placement.evidence = reader.Evidence();
  return found;
}

Detected FromMpich(const EnvironmentLookup& env) {
  if (!env("PMI_RANK")) return std::nullopt;
  Reader reader(env);
  MUSTER_ASSIGN_OR_RETURN_NUMBER(rank, reader.Number("PMI_RANK"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(size, reader.Number("PMI_SIZE", true));
  auto found = Make("MPICH", "PMI_RANK", *rank, "PMI_SIZE", *size);
  if (!found.ok()) return found;
  MUSTER_ASSIGN_OR_RETURN_NUMBER(local, reader.Number("MPI_LOCALRANKID"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(locals, reader.Number("MPI_LOCALNRANKS", true));
  (*found)->placement.local_task = local->value_or(0);
  (*found)->placement.num_local_tasks = locals->value_or(0);
  (*found)->placement.evidence = reader.Evidence();
  return found;
}

Detected FromPmix(const EnvironmentLookup& env) {
  if (!env("PMIX_RANK")) return std::nullopt;
  Reader reader(env);
  MUSTER_ASSIGN_OR_RETURN_NUMBER(rank, reader.Number("PMIX_RANK"));
  auto found = Make("PMIx", "PMIX_RANK", *rank, "", std::nullopt);
  if (found.ok() && *found) (*found)->placement.evidence = reader.Evidence();
  return found;
}

// A task of an srun step. A batch script itself (SLURM_PROCID 0 of the allocation's
// SLURM_NTASKS, no SLURM_STEP_NUM_TASKS) is not one: it runs once, on the first node.
Detected FromSlurm(const EnvironmentLookup& env) {
  if (!env("SLURM_PROCID") || !env("SLURM_STEP_NUM_TASKS")) return std::nullopt;
  Reader reader(env);
  MUSTER_ASSIGN_OR_RETURN_NUMBER(rank, reader.Number("SLURM_PROCID"));
  const std::string size_name = "SLURM_STEP_NUM_TASKS";
  MUSTER_ASSIGN_OR_RETURN_NUMBER(size, reader.Number(size_name, true));
  auto found = Make("Slurm", "SLURM_PROCID", *rank, size_name, *size);
  if (!found.ok()) return found;
  ClusterPlacement& p = (*found)->placement;
  std::string ignored;
  MUSTER_ASSIGN_OR_RETURN_NUMBER(local, reader.Number("SLURM_LOCALID"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(node, reader.Number("SLURM_NODEID"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(
      nodes, reader.FirstNumber({"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"},
                                true, &ignored));
  p.local_task = local->value_or(0);
  p.node = node->value_or(0);
  p.num_nodes = nodes->value_or(0);
  for (absl::string_view name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    std::optional<std::string> text = reader.Text(name);
    if (!text) continue;
    auto per_node = ExpandSlurmTasksPerNode(*text);
    if (!per_node.ok()) return per_node.status();
    if (p.node < static_cast<int>(per_node->size())) p.num_local_tasks = (*per_node)[p.node];
    break;
  }
  for (absl::string_view name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    std::optional<std::string> text = reader.Text(name);
    if (!text) continue;
    auto hosts = ExpandSlurmHostList(*text);
    if (!hosts.ok()) return hosts.status();
    (*found)->leader_host = hosts->front();
    break;
  }
  p.evidence = reader.Evidence();
  return found;
}

// "<name>-<index>" of an indexed Job ("<jobset>-<job>-<job index>-<index>" of a JobSet): the
// index and the label of index 0's pod, from this pod's host name (its first label).
bool SplitIndexedLabel(absl::string_view label, bool jobset, int* index, int* job_index,
                       std::string* first) {
  size_t dash = label.rfind('-');
  if (dash == absl::string_view::npos || !absl::SimpleAtoi(label.substr(dash + 1), index)) {
    return false;
  }
  absl::string_view base = label.substr(0, dash);
  *job_index = 0;
  if (jobset) {
    size_t job_dash = base.rfind('-');
    if (job_dash == absl::string_view::npos ||
        !absl::SimpleAtoi(base.substr(job_dash + 1), job_index)) {
      return false;
    }
    base = base.substr(0, job_dash);
    *first = absl::StrCat(base, "-0-0");
  } else {
    *first = absl::StrCat(base, "-0");
  }
  return true;
}

Detected FromKubernetes(const EnvironmentLookup& env, absl::string_view host_name) {
  if (!env("JOB_COMPLETION_INDEX")) return std::nullopt;
  Reader reader(env);
  MUSTER_ASSIGN_OR_RETURN_NUMBER(rank, reader.Number("JOB_COMPLETION_INDEX"));
  const bool jobset = reader.Text("JOBSET_NAME").has_value();
  MUSTER_ASSIGN_OR_RETURN_NUMBER(job_index_variable, reader.Number("JOB_INDEX"));
  std::string size_name;
  MUSTER_ASSIGN_OR_RETURN_NUMBER(
      size, reader.FirstNumber({"MUSTER_WORLD_SIZE", "WORLD_SIZE"}, true, &size_name));
  const absl::string_view kind = jobset ? "a JobSet" : "an indexed Job";
  if (!*size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Kubernetes (", kind, ", JOB_COMPLETION_INDEX=", **rank,
        ") does not say how many tasks the job has: set MUSTER_WORLD_SIZE to the Job's "
        "completions"));
  }
  auto found = Make("Kubernetes", "JOB_COMPLETION_INDEX", *rank, size_name, *size);
  if (!found.ok()) return found;
  absl::string_view label = host_name.substr(0, host_name.find('.'));
  absl::string_view domain =
      label.size() < host_name.size() ? host_name.substr(label.size()) : absl::string_view();
  int index = 0, job_index = 0;
  std::string first;
  if (!SplitIndexedLabel(label, jobset, &index, &job_index, &first)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Kubernetes: the pod's host name \"", host_name, "\" is not that of ", kind,
                     "'s pod (", jobset ? "JOBSET-JOB-J-I" : "JOB-I",
                     "): set MUSTER_LEADER=HOST:PORT, or run the pods as ", kind));
  }
  if (index != **rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("Kubernetes says two things: JOB_COMPLETION_INDEX=", **rank,
                     " but the pod's host name \"", host_name, "\" ends in index ", index));
  }
  if (*job_index_variable && **job_index_variable != job_index) {
    return absl::InvalidArgumentError(
        absl::StrCat("Kubernetes says two things: JOB_INDEX=", **job_index_variable,
                     " but the pod's host name \"", host_name, "\" names Job ", job_index));
  }
  if (job_index != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Kubernetes: this pod belongs to Job ", job_index,
        " of its JobSet's replicated Job, whose pods' task ids the environment does not give: "
        "set MUSTER_LEADER, MUSTER_JOB and MUSTER_TASK in the pod template"));
  }
  if (domain.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Kubernetes: the pod's host name \"", host_name,
                     "\" has no subdomain, so index 0's pod cannot be reached by name: set the pod "
                     "template's subdomain to a headless service (or MUSTER_LEADER=HOST:PORT)"));
  }
  (*found)->leader_host = absl::StrCat(first, domain);
  (*found)->placement.evidence = reader.Evidence();
  return found;
}

// RANK and WORLD_SIZE as a user (or a launcher such as deepspeed) sets them for env://.
Detected FromTorchEnv(const EnvironmentLookup& env) {
  if (!env("RANK") || !env("WORLD_SIZE")) return std::nullopt;
  Reader reader(env);
  MUSTER_ASSIGN_OR_RETURN_NUMBER(rank, reader.Number("RANK"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(size, reader.Number("WORLD_SIZE", true));
  auto found = Make("RANK and WORLD_SIZE", "RANK", *rank, "WORLD_SIZE", *size);
  if (!found.ok()) return found;
  MUSTER_ASSIGN_OR_RETURN_NUMBER(local, reader.Number("LOCAL_RANK"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(locals, reader.Number("LOCAL_WORLD_SIZE", true));
  (*found)->placement.local_task = local->value_or(0);
  (*found)->placement.num_local_tasks = locals->value_or(0);
  (*found)->leader_host = reader.Text("MASTER_ADDR").value_or("");
  (*found)->placement.evidence = reader.Evidence();
  return found;
}

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
