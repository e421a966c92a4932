#include "muster/net/process/cluster/cluster_sources.h"

#include <initializer_list>
#include <vector>

#include <absl/strings/ascii.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>

#include "muster/net/process/launch_environment.h"

namespace muster::cluster_internal {
namespace {

constexpr int kMaxTasks = 1'000'000;

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

  // This task's place among its host's: `rank_name` of `size_name`, both optional.
  absl::Status Local(absl::string_view rank_name, absl::string_view size_name,
                     ClusterPlacement* placement) {
    absl::StatusOr<std::optional<int>> local = Number(rank_name);
    if (!local.ok()) return local.status();
    absl::StatusOr<std::optional<int>> locals = Number(size_name, true);
    if (!locals.ok()) return locals.status();
    placement->local_task = local->value_or(0);
    placement->num_local_tasks = locals->value_or(0);
    return absl::OkStatus();
  }

  std::string Evidence() const { return absl::StrJoin(evidence_, " "); }

 private:
  const EnvironmentLookup& env_;
  std::vector<std::string> evidence_;
};

#define MUSTER_ASSIGN_OR_RETURN_NUMBER(lhs, expr) \
  auto lhs = (expr);                              \
  if (!lhs.ok()) return lhs.status()

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

// RANK of WORLD_SIZE, LOCAL_RANK of LOCAL_WORLD_SIZE, the leader at MASTER_ADDR: PyTorch's
// variables, as torchrun or a user sets them.
Detected FromRankVariables(Reader& reader, absl::string_view source) {
  MUSTER_ASSIGN_OR_RETURN_NUMBER(rank, reader.Number("RANK"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(size, reader.Number("WORLD_SIZE", true));
  Detected found = Make(source, "RANK", *rank, "WORLD_SIZE", *size);
  if (!found.ok()) return found;
  ClusterPlacement& p = (*found)->placement;
  if (absl::Status s = reader.Local("LOCAL_RANK", "LOCAL_WORLD_SIZE", &p); !s.ok()) return s;
  (*found)->leader_host = reader.Text("MASTER_ADDR").value_or("");
  p.evidence = reader.Evidence();
  return found;
}

}  // namespace

Detected FromMusterRun(const EnvironmentLookup& env) {
  absl::StatusOr<std::optional<LaunchIdentity>> identity = LaunchIdentityFrom(env);
  if (!identity.ok()) return identity.status();
  if (!*identity) return std::nullopt;
  Reader reader(env);
  for (absl::string_view name : {kLeaderEnv, kJobEnv, kTaskEnv, kGenerationEnv, kRoundEnv}) {
    (void)reader.Text(name);  // the evidence
  }
  Found found;
  found.placement.source = "muster run";
  found.placement.leader = (*identity)->leader;
  found.placement.job = (*identity)->job;
  found.placement.task_id = (*identity)->task_id;
  found.placement.generation = (*identity)->generation;
  found.placement.round = (*identity)->round;
  found.rank_variable = absl::StrCat(kTaskEnv, "=", (*identity)->task_id);
  // muster run's RANK counts the tasks of every job; its WORLD_SIZE is theirs, not the job's.
  if (absl::Status s = reader.Local("LOCAL_RANK", "LOCAL_WORLD_SIZE", &found.placement); !s.ok())
    return s;
  found.placement.evidence = reader.Evidence();
  return found;
}

Detected FromTorchrun(const EnvironmentLookup& env) {
  if (!env("TORCHELASTIC_RUN_ID") || !env("RANK")) return std::nullopt;
  if (!env("WORLD_SIZE")) {
    return absl::InvalidArgumentError("torchrun: RANK is set but WORLD_SIZE is not");
  }
  Reader reader(env);
  Detected found = FromRankVariables(reader, "torchrun");
  if (!found.ok() || !*found) return found;
  ClusterPlacement& p = (*found)->placement;
  MUSTER_ASSIGN_OR_RETURN_NUMBER(node, reader.Number("GROUP_RANK"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(nodes, reader.Number("GROUP_WORLD_SIZE", true));
  p.node = node->value_or(0);
  p.num_nodes = nodes->value_or(0);
  p.evidence = reader.Evidence();
  return found;
}

// mpirun's own host, from "4006936576.0;tcp://10.0.0.1,172.17.0.1:40573".
static std::string HostOfHnpUri(absl::string_view uri) {
  size_t at = uri.find("tcp://");  // IPv4; "tcp6://[...]" addresses are skipped
  if (at == absl::string_view::npos) return "";
  absl::string_view rest = uri.substr(at + 6);
  return std::string(rest.substr(0, rest.find_first_of(",:;")));
}

Detected FromOpenMpi(const EnvironmentLookup& env) {
  if (!env("OMPI_COMM_WORLD_RANK")) return std::nullopt;
  Reader reader(env);
  MUSTER_ASSIGN_OR_RETURN_NUMBER(rank, reader.Number("OMPI_COMM_WORLD_RANK"));
  MUSTER_ASSIGN_OR_RETURN_NUMBER(size, reader.Number("OMPI_COMM_WORLD_SIZE", true));
  auto found = Make("Open MPI", "OMPI_COMM_WORLD_RANK", *rank, "OMPI_COMM_WORLD_SIZE", *size);
  if (!found.ok()) return found;
  if (absl::Status s = reader.Local("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                    &(*found)->placement);
      !s.ok())
    return s;
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
  if (absl::Status s = reader.Local("MPI_LOCALRANKID", "MPI_LOCALNRANKS", &(*found)->placement);
      !s.ok())
    return s;
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
    auto first = FirstSlurmHost(*text);
    if (!first.ok()) return first.status();
    (*found)->leader_host = *std::move(first);
    break;
  }
  p.evidence = reader.Evidence();
  return found;
}

// "<name>-<index>" of an indexed Job ("<jobset>-<job>-<job index>-<index>" of a JobSet): the
// index and the label of index 0's pod, from this pod's host name (its first label).
static bool SplitIndexedLabel(absl::string_view label, bool jobset, int* index, int* job_index,
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
  // The Job's completions are in no variable: WORLD_SIZE if the pod template sets it, else
  // MUSTER_WORLD_SIZE (DetectCluster).
  MUSTER_ASSIGN_OR_RETURN_NUMBER(size, reader.Number("WORLD_SIZE", true));
  const absl::string_view kind = jobset ? "a JobSet" : "an indexed Job";
  auto found = Make("Kubernetes", "JOB_COMPLETION_INDEX", *rank, "WORLD_SIZE", *size);
  if (!found.ok()) return found;
  (*found)->placement.evidence = reader.Evidence();
  // With MUSTER_LEADER the leader needs no name derived from this pod's.
  const bool leader_given = !env("MUSTER_LEADER").value_or("").empty();
  absl::string_view label = host_name.substr(0, host_name.find('.'));
  absl::string_view domain =
      label.size() < host_name.size() ? host_name.substr(label.size()) : absl::string_view();
  int index = 0, job_index = 0;
  std::string first;
  if (!SplitIndexedLabel(label, jobset, &index, &job_index, &first)) {
    if (leader_given && !jobset) return found;
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
    if (leader_given) return found;
    return absl::InvalidArgumentError(
        absl::StrCat("Kubernetes: the pod's host name \"", host_name,
                     "\" has no subdomain, so index 0's pod cannot be reached by name: set the pod "
                     "template's subdomain to a headless service (or MUSTER_LEADER=HOST:PORT)"));
  }
  (*found)->leader_host = absl::StrCat(first, domain);
  return found;
}

Detected FromTorchEnv(const EnvironmentLookup& env) {
  if (!env("RANK") || !env("WORLD_SIZE")) return std::nullopt;
  Reader reader(env);
  return FromRankVariables(reader, "RANK and WORLD_SIZE");
}

}  // namespace muster::cluster_internal
