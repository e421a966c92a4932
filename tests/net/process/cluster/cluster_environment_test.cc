#include "muster/net/process/cluster/cluster_environment.h"

#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace muster {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Env = std::map<std::string, std::string>;

EnvironmentLookup Lookup(const Env& env) {
  return [env](absl::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

ClusterPlacement Detect(const Env& env, absl::string_view host = "node01") {
  auto placement = DetectCluster(Lookup(env), host);
  EXPECT_TRUE(placement.ok()) << placement.status();
  if (!placement.ok() || !*placement) {
    ADD_FAILURE() << "nothing detected";
    return {};
  }
  return **placement;
}

absl::Status DetectError(const Env& env, absl::string_view host = "node01") {
  auto placement = DetectCluster(Lookup(env), host);
  return placement.status();
}

const Env kSlurm = {{"SLURM_PROCID", "5"},
                    {"SLURM_STEP_NUM_TASKS", "8"},
                    {"SLURM_NTASKS", "16"},
                    {"SLURM_LOCALID", "1"},
                    {"SLURM_NODEID", "1"},
                    {"SLURM_STEP_NUM_NODES", "2"},
                    {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
                    {"SLURM_STEP_NODELIST", "gpu[07-08]"}};

Env With(Env env, const Env& more) {
  for (const auto& [k, v] : more) env[k] = v;
  return env;
}

TEST(ClusterEnvironmentTest, NothingSet_Nothing) {
  auto placement = DetectCluster(Lookup({{"HOME", "/root"}}), "node01");
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_FALSE(placement->has_value());
}

// sbatch runs its script once, on the first node, as SLURM_PROCID 0 of the allocation's tasks:
// that process is not one of them.
TEST(ClusterEnvironmentTest, ASpareWithoutItsTask_FailedPrecondition) {
  absl::Status s = DetectError(
      With(kSlurm, {{"MUSTER_SPARE", "muster/spares/h/x"}, {"MUSTER_LEADER", "h:7400"}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("a spare of muster run --spares"));
}

TEST(ClusterEnvironmentTest, SlurmBatchScriptOutsideAStep_Nothing) {
  auto placement = DetectCluster(
      Lookup({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_JOB_NODELIST", "n[1-2]"}}),
      "n1");
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_FALSE(placement->has_value());
}

TEST(ClusterEnvironmentTest, MusterRun_ItsVariablesAsTheyAre) {
  ClusterPlacement p = Detect(With(kSlurm, {{"MUSTER_LEADER", "gpu07:7400"},
                                            {"MUSTER_JOB", "ps"},
                                            {"MUSTER_TASK", "2"},
                                            {"MUSTER_GENERATION", "3"},
                                            {"LOCAL_RANK", "0"},
                                            {"LOCAL_WORLD_SIZE", "2"}}));
  EXPECT_EQ(p.source, "muster run");
  EXPECT_EQ(p.leader, "gpu07:7400");
  EXPECT_EQ(p.job, "ps");
  EXPECT_EQ(p.task_id, 2);
  EXPECT_EQ(p.generation, 3);
  EXPECT_EQ(p.num_local_tasks, 2);
}

TEST(ClusterEnvironmentTest, Slurm_RankSizeLocalAndTheStepsFirstNodeLeads) {
  ClusterPlacement p = Detect(kSlurm);
  EXPECT_EQ(p.source, "Slurm");
  EXPECT_EQ(p.job, "worker");
  EXPECT_EQ(p.task_id, 5);
  EXPECT_EQ(p.num_tasks, 8);  // the step's tasks, not the allocation's
  EXPECT_EQ(p.local_task, 1);
  EXPECT_EQ(p.num_local_tasks, 4);
  EXPECT_EQ(p.node, 1);
  EXPECT_EQ(p.num_nodes, 2);
  EXPECT_EQ(p.leader, "gpu07:7400");
  EXPECT_EQ(PlacementText(p),
            "Slurm (SLURM_PROCID=5 SLURM_STEP_NUM_TASKS=8 SLURM_LOCALID=1 SLURM_NODEID=1 "
            "SLURM_STEP_NUM_NODES=2 SLURM_STEP_TASKS_PER_NODE=4(x2) SLURM_STEP_NODELIST=gpu[07-08]"
            "): /job:worker/task:5 of 8, local 1 of 4, node 1 of 2, leader gpu07:7400");
}

TEST(ClusterEnvironmentTest, Overrides_JobLeaderAndPort) {
  EXPECT_EQ(Detect(With(kSlurm, {{"MUSTER_PORT", "7555"}})).leader, "gpu07:7555");
  ClusterPlacement p =
      Detect(With(kSlurm, {{"MUSTER_LEADER", "head:9000"}, {"MUSTER_JOB", "trainer"}}));
  EXPECT_EQ(p.leader, "head:9000");
  EXPECT_EQ(p.job, "trainer");
  EXPECT_THAT(DetectError(With(kSlurm, {{"MUSTER_PORT", "70000"}})).message(),
              HasSubstr("MUSTER_PORT=\"70000\" is not a port"));
}

TEST(ClusterEnvironmentTest, TorchrunInsideSlurm_TorchrunDecides) {
  ClusterPlacement p = Detect(With(kSlurm, {{"TORCHELASTIC_RUN_ID", "run1"},
                                            {"RANK", "3"},
                                            {"WORLD_SIZE", "16"},
                                            {"LOCAL_RANK", "3"},
                                            {"LOCAL_WORLD_SIZE", "8"},
                                            {"GROUP_RANK", "0"},
                                            {"GROUP_WORLD_SIZE", "2"},
                                            {"MASTER_ADDR", "gpu08"}}));
  EXPECT_EQ(p.source, "torchrun");
  EXPECT_EQ(p.task_id, 3);
  EXPECT_EQ(p.num_tasks, 16);
  EXPECT_EQ(p.num_local_tasks, 8);
  EXPECT_EQ(p.num_nodes, 2);
  EXPECT_EQ(p.leader, "gpu08:7400");
}

TEST(ClusterEnvironmentTest, OpenMpi_MpirunsHostLeads) {
  ClusterPlacement p =
      Detect({{"OMPI_COMM_WORLD_RANK", "2"},
              {"OMPI_COMM_WORLD_SIZE", "4"},
              {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
              {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
              {"OMPI_MCA_orte_hnp_uri", "4006936576.0;tcp://10.0.0.1,172.17.0.1:40573"}});
  EXPECT_EQ(p.source, "Open MPI");
  EXPECT_EQ(p.task_id, 2);
  EXPECT_EQ(p.num_tasks, 4);
  EXPECT_EQ(p.num_local_tasks, 2);
  EXPECT_EQ(p.leader, "10.0.0.1:7400");
}

TEST(ClusterEnvironmentTest, OpenMpiAndPmixDisagree_AnErrorNamingBoth) {
  absl::Status s = DetectError({{"OMPI_COMM_WORLD_RANK", "2"},
                                {"OMPI_COMM_WORLD_SIZE", "4"},
                                {"PMIX_RANK", "3"},
                                {"MASTER_ADDR", "h"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("Open MPI and PMIx disagree on this process's rank"),
                                 HasSubstr("OMPI_COMM_WORLD_RANK=2"), HasSubstr("PMIX_RANK=3")));
}

TEST(ClusterEnvironmentTest, PmixStartedBySrun_SlurmGivesTheSizeAndLeader) {
  ClusterPlacement p = Detect(With(kSlurm, {{"PMIX_RANK", "5"}}));
  EXPECT_EQ(p.source, "PMIx");
  EXPECT_EQ(p.task_id, 5);
  EXPECT_EQ(p.num_tasks, 8);
  EXPECT_EQ(p.num_local_tasks, 4);
  EXPECT_EQ(p.leader, "gpu07:7400");
}

TEST(ClusterEnvironmentTest, MpiStartedBySrunDisagreesWithSlurm_AnErrorNamingBoth) {
  absl::Status s = DetectError(With(kSlurm, {{"PMI_RANK", "4"}, {"PMI_SIZE", "8"}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("Slurm and MPICH disagree"), HasSubstr("SLURM_PROCID=5"),
                                 HasSubstr("PMI_RANK=4")));
}

TEST(ClusterEnvironmentTest, MpirunInsideAnAllocation_MpiDecidesWithoutConflict) {
  ClusterPlacement p = Detect(With(
      kSlurm,
      {{"OMPI_COMM_WORLD_RANK", "17"}, {"OMPI_COMM_WORLD_SIZE", "32"}, {"MASTER_ADDR", "gpu07"}}));
  EXPECT_EQ(p.source, "Open MPI");
  EXPECT_EQ(p.task_id, 17);
  EXPECT_EQ(p.num_tasks, 32);
}

TEST(ClusterEnvironmentTest, MusterWorldSizeDisagrees_AnErrorNamingBoth) {
  absl::Status s = DetectError(With(kSlurm, {{"MUSTER_WORLD_SIZE", "6"}}));
  EXPECT_THAT(s.message(), AllOf(HasSubstr("MUSTER_WORLD_SIZE=6 and Slurm disagree"),
                                 HasSubstr("SLURM_STEP_NUM_TASKS=8")));
  EXPECT_EQ(Detect(With(kSlurm, {{"MUSTER_WORLD_SIZE", "8"}})).num_tasks, 8);
}

TEST(ClusterEnvironmentTest, KubernetesIndexedJob_IndexZerosPodLeads) {
  ClusterPlacement p = Detect({{"JOB_COMPLETION_INDEX", "2"}, {"MUSTER_WORLD_SIZE", "4"}},
                              "train-2.train-svc.ml.svc.cluster.local");
  EXPECT_EQ(p.source, "Kubernetes");
  EXPECT_EQ(p.task_id, 2);
  EXPECT_EQ(p.num_tasks, 4);
  EXPECT_EQ(p.leader, "train-0.train-svc.ml.svc.cluster.local:7400");
}

TEST(ClusterEnvironmentTest, KubernetesJobSet_ItsFirstPodLeads) {
  ClusterPlacement p = Detect({{"JOB_COMPLETION_INDEX", "1"},
                               {"JOBSET_NAME", "llm"},
                               {"JOB_INDEX", "0"},
                               {"WORLD_SIZE", "2"}},
                              "llm-workers-0-1.llm");
  EXPECT_EQ(p.task_id, 1);
  EXPECT_EQ(p.leader, "llm-workers-0-0.llm:7400");
  EXPECT_THAT(
      DetectError({{"JOB_COMPLETION_INDEX", "1"}, {"JOBSET_NAME", "llm"}, {"WORLD_SIZE", "4"}},
                  "llm-workers-1-1.llm")
          .message(),
      HasSubstr("set MUSTER_LEADER, MUSTER_JOB and MUSTER_TASK"));
}

TEST(ClusterEnvironmentTest, KubernetesBadSituations_SayWhatToSet) {
  EXPECT_THAT(DetectError({{"JOB_COMPLETION_INDEX", "2"}}, "train-2.svc").message(),
              HasSubstr("set MUSTER_WORLD_SIZE"));
  EXPECT_THAT(
      DetectError({{"JOB_COMPLETION_INDEX", "2"}, {"MUSTER_WORLD_SIZE", "4"}}, "train-3.svc")
          .message(),
      AllOf(HasSubstr("JOB_COMPLETION_INDEX=2"), HasSubstr("\"train-3.svc\" ends in index 3")));
  EXPECT_THAT(
      DetectError({{"JOB_COMPLETION_INDEX", "2"}, {"MUSTER_WORLD_SIZE", "4"}}, "train-2").message(),
      HasSubstr("headless service"));
  EXPECT_THAT(
      DetectError({{"JOB_COMPLETION_INDEX", "2"}, {"MUSTER_WORLD_SIZE", "4"}}, "laptop").message(),
      HasSubstr("set MUSTER_LEADER"));
}

TEST(ClusterEnvironmentTest, PlainRankAndWorldSize_MasterAddrLeads) {
  ClusterPlacement p = Detect({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.1.2.3"}});
  EXPECT_EQ(p.source, "RANK and WORLD_SIZE");
  EXPECT_EQ(p.leader, "10.1.2.3:7400");
  EXPECT_THAT(DetectError({{"RANK", "1"}, {"WORLD_SIZE", "2"}}).message(),
              HasSubstr("does not say which host runs the leader: set MUSTER_LEADER"));
}

TEST(ClusterEnvironmentTest, MalformedValues_InvalidArgumentNamingTheVariable) {
  EXPECT_THAT(DetectError({{"SLURM_PROCID", "x"}, {"SLURM_STEP_NUM_TASKS", "2"}}).message(),
              HasSubstr("SLURM_PROCID=\"x\" is not a non-negative number"));
  EXPECT_THAT(DetectError({{"SLURM_PROCID", "2"}, {"SLURM_STEP_NUM_TASKS", "2"}}).message(),
              HasSubstr("SLURM_PROCID=2 is not below SLURM_STEP_NUM_TASKS=2"));
  EXPECT_THAT(DetectError({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).message(),
              HasSubstr("WORLD_SIZE=\"0\" is not a positive number"));
  EXPECT_THAT(
      DetectError(
          {{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_STEP_NODELIST", "a[1-"}})
          .message(),
      HasSubstr("a '[' without ']'"));
}

TEST(ClusterEnvironmentTest, Ipv6Leader_InBracketsOnce) {
  EXPECT_EQ(Detect({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "fd00::1"}}).leader,
            "[fd00::1]:7400");
  EXPECT_EQ(Detect({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "[fd00::1]"}}).leader,
            "[fd00::1]:7400");
}

TEST(ClusterEnvironmentTest, MusterWorldSize_GivesTheSizeASourceLacksAndComparesAsANumber) {
  ClusterPlacement p =
      Detect({{"PMIX_RANK", "3"}, {"MUSTER_WORLD_SIZE", "4"}, {"MASTER_ADDR", "head"}});
  EXPECT_EQ(p.source, "PMIx");
  EXPECT_EQ(p.num_tasks, 4);
  EXPECT_EQ(Detect(With(kSlurm, {{"MUSTER_WORLD_SIZE", "08"}})).num_tasks, 8);
  EXPECT_THAT(
      DetectError({{"PMIX_RANK", "4"}, {"MUSTER_WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}}).message(),
      HasSubstr("PMIX_RANK=4 is not below MUSTER_WORLD_SIZE=4"));
  EXPECT_THAT(DetectError({{"PMIX_RANK", "1"}, {"MASTER_ADDR", "h"}}).message(),
              HasSubstr("does not say how many tasks the job has: set MUSTER_WORLD_SIZE"));
}

// mpirun's daemons are started by srun, so its ranks inherit a Slurm step's variables; its own
// (OMPI_MCA_orte_hnp_uri, Hydra's PMI_PORT) say it was not srun that started them.
TEST(ClusterEnvironmentTest, MpirunsRanksWithSlurmVariablesOfItsDaemons_NoConflict) {
  ClusterPlacement p = Detect(With(kSlurm, {{"OMPI_COMM_WORLD_RANK", "2"},
                                            {"OMPI_COMM_WORLD_SIZE", "8"},
                                            {"OMPI_MCA_orte_hnp_uri", "1.0;tcp://10.0.0.9:4000"}}));
  EXPECT_EQ(p.task_id, 2);
  EXPECT_EQ(p.leader, "10.0.0.9:7400");
  EXPECT_EQ(
      Detect(
          With(kSlurm,
               {{"PMI_RANK", "2"}, {"PMI_SIZE", "8"}, {"PMI_PORT", "h:1"}, {"MASTER_ADDR", "h"}}))
          .task_id,
      2);
  // Hydra inside an srun --mpi=pmix step: the step's PMIX_RANK is not this process's.
  EXPECT_EQ(Detect({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"PMIX_RANK", "0"}, {"MASTER_ADDR", "h"}})
                .task_id,
            1);
}

TEST(ClusterEnvironmentTest, RankAndWorldSizeContradictingSlurm_AnErrorNamingBoth) {
  absl::Status s = DetectError(With(kSlurm, {{"RANK", "11"}, {"WORLD_SIZE", "16"}}));
  EXPECT_THAT(s.message(), AllOf(HasSubstr("Slurm and RANK and WORLD_SIZE disagree"),
                                 HasSubstr("SLURM_PROCID=5"), HasSubstr("RANK=11")));
  EXPECT_EQ(Detect(With(kSlurm, {{"RANK", "5"}, {"WORLD_SIZE", "8"}})).source, "Slurm");
}

TEST(ClusterEnvironmentTest, KubernetesWithMusterLeader_NoHostNameNeeded) {
  ClusterPlacement p = Detect(
      {{"JOB_COMPLETION_INDEX", "2"}, {"MUSTER_WORLD_SIZE", "4"}, {"MUSTER_LEADER", "svc:7400"}},
      "laptop");
  EXPECT_EQ(p.task_id, 2);
  EXPECT_EQ(p.leader, "svc:7400");
  EXPECT_EQ(Detect({{"JOB_COMPLETION_INDEX", "2"},
                    {"MUSTER_WORLD_SIZE", "4"},
                    {"MUSTER_LEADER", "svc:7400"}},
                   "train-2")
                .leader,
            "svc:7400");
}

TEST(SlurmListsTest, FirstHost_WithoutExpandingTheRest) {
  EXPECT_EQ(*FirstSlurmHost("node[007-999999999],x"), "node007");
  EXPECT_EQ(*FirstSlurmHost("gpu-a[8-9]x,login"), "gpu-a8x");
  EXPECT_EQ(*FirstSlurmHost("login,gpu[1-2]"), "login");
  EXPECT_FALSE(FirstSlurmHost("n[1-").ok());
  EXPECT_FALSE(FirstSlurmHost("").ok());
}

TEST(SlurmListsTest, HostLists_RangesPaddingAndSeveralParts) {
  EXPECT_THAT(*ExpandSlurmHostList("node[01-03,10],gpu-a[8-9]x,login"),
              ElementsAre("node01", "node02", "node03", "node10", "gpu-a8x", "gpu-a9x", "login"));
  EXPECT_THAT(*ExpandSlurmHostList("localhost"), ElementsAre("localhost"));
  EXPECT_FALSE(ExpandSlurmHostList("n[3-1]").ok());
  EXPECT_FALSE(ExpandSlurmHostList("n[[1]]").ok());
  EXPECT_FALSE(ExpandSlurmHostList("n]").ok());
  EXPECT_FALSE(ExpandSlurmHostList("").ok());
  EXPECT_THAT(ExpandSlurmHostList("n[0-999999999]").status().message(),
              HasSubstr("more than 100000 hosts"));
  EXPECT_THAT(*ExpandSlurmHostList("n[18446744073709551615]"),
              ElementsAre("n18446744073709551615"));
  EXPECT_FALSE(ExpandSlurmHostList("n[0-18446744073709551615]").ok());
}

TEST(SlurmListsTest, TasksPerNode_Repeats) {
  EXPECT_THAT(*ExpandSlurmTasksPerNode("2(x3),1"), ElementsAre(2, 2, 2, 1));
  EXPECT_FALSE(ExpandSlurmTasksPerNode("2(3)").ok());
  EXPECT_FALSE(ExpandSlurmTasksPerNode("x").ok());
  EXPECT_FALSE(ExpandSlurmTasksPerNode("1(x99999999999)").ok());
  EXPECT_FALSE(ExpandSlurmTasksPerNode("1(x0)").ok());
}

TEST(SlurmStepTest, LaunchersOfAStep_OnePerNodeNumberedByNode) {
  auto step = DetectSlurmStep(Lookup(With(kSlurm, {{"SLURM_PROCID", "0"},
                                                   {"SLURM_STEP_NUM_TASKS", "2"},
                                                   {"SLURM_LOCALID", "0"},
                                                   {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}})));
  ASSERT_TRUE(step.ok() && *step) << step.status();
  EXPECT_EQ((*step)->launcher, 1);  // SLURM_NODEID: srun's arbitrary distribution may differ
  EXPECT_EQ((*step)->num_launchers, 2);
  EXPECT_EQ((*step)->first_node, "gpu07");
  EXPECT_THAT(DetectSlurmStep(Lookup(kSlurm)).status().message(),
              HasSubstr("runs 8 launchers on 2 node(s): run one muster run per node "
                        "(srun --ntasks-per-node=1)"));
  EXPECT_FALSE(DetectSlurmStep(Lookup({}))->has_value());
  EXPECT_THAT(DetectSlurmStep(Lookup({{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "2"}}))
                  .status()
                  .message(),
              HasSubstr("names no node list"));
}

}  // namespace
}  // namespace muster
