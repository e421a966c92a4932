// `muster status` against a real `muster serve` process: the tables, the JSON report parsed
// back into its proto, --watch, and a leader that is not there (at once; with --wait-for-leader,
// until it is there or the timeout).
#include <csignal>

#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "muster/tools/job/status_report.pb.h"
#include "tests/cli/cli_process.h"

namespace muster::cli {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

Result RunWorker(const Leader& leader, int task) {
  auto worker =
      Subprocess::Start({MUSTER_E2E_WORKER_BIN, "--leader=" + leader.address(), "--job=worker",
                         absl::StrCat("--task=", task), "--scenario=exit_without_shutdown"});
  EXPECT_TRUE(worker.ok()) << worker.status();
  if (!worker.ok()) return {};
  return Finish(**worker);
}

// Parses the first line of `output` that starts with '{' as a StatusReport.
StatusReport ParseReport(const std::string& output) {
  StatusReport report;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (!absl::StartsWith(line, "{")) continue;
    auto status = google::protobuf::util::JsonStringToMessage(std::string(line), &report);
    EXPECT_TRUE(status.ok()) << status << "\n" << line;
    return report;
  }
  ADD_FAILURE() << "no JSON line in:\n" << output;
  return report;
}

const proto::CoordinatedTaskStateInfo* FindTask(const StatusReport& report, const std::string& job,
                                                int id) {
  for (const auto& info : report.tasks()) {
    if (info.task().job_name() == job && info.task().task_id() == id) return &info;
  }
  return nullptr;
}

TEST(MusterStatusTest, FreshLeader_ListsEveryTaskDisconnected) {
  Leader leader({"--job=worker=2"});
  ASSERT_TRUE(leader.ok());
  Result status = RunMuster({"status", leader.leader_flag()});
  EXPECT_EQ(status.code, 0) << status.output;
  EXPECT_THAT(status.output, HasSubstr("TASKS (2)"));
  EXPECT_THAT(status.output, ContainsRegex("/job:worker/task:0 +DISCONNECTED +- +never"));
  EXPECT_THAT(status.output, ContainsRegex("/job:worker/task:1 +DISCONNECTED"));
  EXPECT_THAT(status.output, HasSubstr("OPEN BARRIERS (0)"));
  EXPECT_THAT(status.output, HasSubstr("KEY-VALUE STORE (0 keys in 0 directories)"));
}

TEST(MusterStatusTest, RegisteredWorkerThatExited_ShowsItsIncarnationAndError) {
  Leader leader({"--job=worker=2"});
  ASSERT_TRUE(leader.ok());
  ASSERT_EQ(RunWorker(leader, 0).code, 0);
  // The worker's exit fails its task: wait until the leader logged it.
  ASSERT_TRUE(leader.process().WaitForLine("/job:worker/task:0 failed", kBound).ok());
  Result status = RunMuster({"status", leader.leader_flag()});
  EXPECT_EQ(status.code, 0) << status.output;
  EXPECT_THAT(status.output, ContainsRegex("/job:worker/task:0 +ERROR +0x[0-9a-f]{16} .*"
                                           "UNAVAILABLE: .*connection to worker lost"));
  EXPECT_THAT(status.output, ContainsRegex("/job:worker/task:1 +DISCONNECTED"));
}

TEST(MusterStatusTest, Json_ParsesIntoTheReport) {
  Leader leader({"--job", "worker=2", "--job", "ps=1"});
  ASSERT_TRUE(leader.ok());
  ASSERT_EQ(Kv(leader, "put", {"config/a", "1"}).code, 0);
  ASSERT_EQ(Kv(leader, "put", {"config/b", "2"}).code, 0);
  ASSERT_EQ(Kv(leader, "put", {"nccl/id", "x"}).code, 0);
  ASSERT_EQ(RunWorker(leader, 1).code, 0);
  ASSERT_TRUE(leader.process().WaitForLine("/job:worker/task:1 failed", kBound).ok());

  Result status = RunMuster({"status", leader.leader_flag(), "--json"});
  ASSERT_EQ(status.code, 0) << status.output;
  StatusReport report = ParseReport(status.output);
  EXPECT_EQ(report.leader(), leader.address());
  EXPECT_EQ(report.tasks_size(), 3);
  ASSERT_NE(FindTask(report, "ps", 0), nullptr);
  EXPECT_EQ(FindTask(report, "ps", 0)->state(), proto::TASKSTATE_DISCONNECTED);
  const auto* failed = FindTask(report, "worker", 1);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->state(), proto::TASKSTATE_ERROR);
  EXPECT_NE(failed->incarnation(), 0u);
  EXPECT_THAT(failed->error_message(), HasSubstr("connection to worker lost"));
  EXPECT_GE(report.version(), 2);  // registered, then failed
  EXPECT_EQ(report.kv_keys(), 3);
  ASSERT_EQ(report.kv_directories_size(), 2);
  EXPECT_EQ(report.kv_directories(0).directory(), "config");
  EXPECT_EQ(report.kv_directories(0).keys(), 2);
  EXPECT_EQ(report.kv_directories(1).directory(), "nccl");
  EXPECT_EQ(report.kv_directories(1).keys(), 1);
  EXPECT_EQ(report.barriers_size(), 0);
}

TEST(MusterStatusTest, ElasticJob_ShowsItsMembershipAndLeavesFixedJobsOut) {
  Leader leader({"--job=worker=2:4", "--job=ps=1"});
  ASSERT_TRUE(leader.ok());
  Result forming = RunMuster({"status", leader.leader_flag()});
  EXPECT_EQ(forming.code, 0) << forming.output;
  EXPECT_THAT(forming.output, HasSubstr("ELASTIC JOBS (1)"));
  EXPECT_THAT(forming.output,
              ContainsRegex("worker +2:4 +0 +none: forming \\(0 of at least 2 connected\\) +-"));
  Result json = RunMuster({"status", leader.leader_flag(), "--json"});
  ASSERT_EQ(json.code, 0) << json.output;
  StatusReport report = ParseReport(json.output);
  ASSERT_EQ(report.memberships_size(), 1);  // ps has a fixed size
  EXPECT_EQ(report.memberships(0).job_name(), "worker");
  EXPECT_EQ(report.memberships(0).min_tasks(), 2);
  EXPECT_EQ(report.memberships(0).max_tasks(), 4);
  EXPECT_EQ(report.memberships(0).version(), 0);
}

TEST(MusterStatusTest, Watch_PrintsAgainWhenATaskChanges) {
  Leader leader({"--job=worker=1"});
  ASSERT_TRUE(leader.ok());
  auto watch = StartMuster({"status", leader.leader_flag(), "--watch", "--json"});
  ASSERT_NE(watch, nullptr);
  ASSERT_TRUE(watch->WaitForLine("TASKSTATE_DISCONNECTED", kBound).ok()) << watch->output();
  ASSERT_EQ(RunWorker(leader, 0).code, 0);
  auto failed = watch->WaitForLine("connection to worker lost", kBound);
  EXPECT_TRUE(failed.ok()) << failed.status();
  watch->Signal(SIGINT);
  Result result = Finish(*watch);
  EXPECT_EQ(result.code, 0) << result.output;
}

TEST(MusterStatusTest, NoLeader_FailsAtOnceSayingNothingListens) {
  absl::Time start = absl::Now();
  Result status = RunMuster({"status", "--leader=127.0.0.1:1"});  // --timeout: 5s
  EXPECT_EQ(status.code, 1);
  EXPECT_THAT(status.output,
              HasSubstr("muster status: UNAVAILABLE: nothing listening at 127.0.0.1:1"));
  EXPECT_THAT(status.output, HasSubstr("is the Muster leader running"));
  EXPECT_THAT(status.output, HasSubstr("--wait-for-leader"));
  EXPECT_THAT(status.output, Not(HasSubstr("ip_connect")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST(MusterStatusTest, NoLeaderWaitingForIt_FailsAfterItsTimeout) {
  absl::Time start = absl::Now();
  Result status =
      RunMuster({"status", "--leader=127.0.0.1:1", "--wait-for-leader", "--timeout=500ms"});
  EXPECT_EQ(status.code, 1);
  EXPECT_THAT(status.output, HasSubstr("muster status: DEADLINE_EXCEEDED"));
  EXPECT_THAT(status.output, HasSubstr("nothing listening at 127.0.0.1:1"));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(500));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(MusterStatusTest, WaitingForLeader_ShowsItOnceItIsUp) {
  std::string port;
  {  // a port that was free a moment ago
    Leader probe({"--job=worker=1"});
    ASSERT_TRUE(probe.ok());
    port = probe.address().substr(probe.address().rfind(':') + 1);
  }
  auto status =
      StartMuster({"status", "--leader=127.0.0.1:" + port, "--wait-for-leader", "--timeout=15s"});
  ASSERT_NE(status, nullptr);
  auto leader = StartMuster({"serve", "--job=worker=1", "--port=" + port});
  ASSERT_NE(leader, nullptr);
  Result shown = Finish(*status);
  EXPECT_EQ(shown.code, 0) << shown.output << leader->output();
  EXPECT_THAT(shown.output, HasSubstr("TASKS (1)"));
}

TEST(MusterStatusTest, LeaderStopsDuringWatch_ExitsOne) {
  Leader leader({"--job=worker=1"});
  ASSERT_TRUE(leader.ok());
  auto watch = StartMuster({"status", leader.leader_flag(), "--watch"});
  ASSERT_NE(watch, nullptr);
  ASSERT_TRUE(watch->WaitForLine("TASKS (1)", kBound).ok()) << watch->output();
  leader.process().Signal(SIGKILL);
  Result result = Finish(*watch);
  EXPECT_EQ(result.code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("muster status: UNAVAILABLE"));
}

}  // namespace
}  // namespace muster::cli
