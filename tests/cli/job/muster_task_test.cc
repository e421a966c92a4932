// `muster task reset` against a real `muster serve` process and worker processes: a task whose
// process crashed stays in ERROR and refuses a new process, saying what to run; the command
// resets it from another process, and the new process registers.
#include <csignal>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/tools/common/command_line.h"
#include "tests/cli/cli_process.h"

namespace muster::cli {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Subprocess> StartWorker(const Leader& leader, const std::string& scenario) {
  auto worker = Subprocess::Start({MUSTER_E2E_WORKER_BIN, "--leader=" + leader.address(),
                                   "--job=worker", "--task=0", "--scenario=" + scenario});
  EXPECT_TRUE(worker.ok()) << worker.status();
  return worker.ok() ? *std::move(worker) : nullptr;
}

Result RunWorker(const Leader& leader, const std::string& scenario) {
  auto worker = StartWorker(leader, scenario);
  return worker == nullptr ? Result{} : Finish(*worker);
}

Result Reset(const Leader& leader) {
  return RunMuster({"task", "reset", leader.leader_flag(), "/job:worker/task:0"});
}

TEST(MusterTaskTest, ResetATaskInError_ANewProcessRegistersIt) {
  Leader leader({"--job=worker=1"});
  ASSERT_TRUE(leader.ok());
  ASSERT_EQ(RunWorker(leader, "exit_without_shutdown").code, 0);
  ASSERT_TRUE(leader.process().WaitForLine("/job:worker/task:0 failed", kBound).ok())
      << leader.process().output();
  Result refused = RunWorker(leader, "shutdown");
  EXPECT_EQ(refused.code, 1) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("EVENT connect code=ABORTED"));
  EXPECT_THAT(refused.output,
              HasSubstr("run `muster task reset --leader HOST:PORT /job:worker/task:0`"));
  Result reset = Reset(leader);
  EXPECT_EQ(reset.code, 0) << reset.output;
  EXPECT_EQ(reset.output, "/job:worker/task:0 is DISCONNECTED: a process may register it again\n");
  Result again = Reset(leader);
  EXPECT_EQ(again.code, 1) << again.output;
  EXPECT_THAT(again.output, HasSubstr("muster task reset: FAILED_PRECONDITION"));
  EXPECT_THAT(again.output, HasSubstr("already disconnected"));
  Result rejoined = RunWorker(leader, "exit_without_shutdown");
  EXPECT_EQ(rejoined.code, 0) << rejoined.output;
  EXPECT_THAT(rejoined.output, HasSubstr("EVENT connect code=OK"));
}

TEST(MusterTaskTest, ResetAConnectedTask_PermissionDeniedAndItStaysConnected) {
  Leader leader({"--job=worker=1"});
  ASSERT_TRUE(leader.ok());
  auto worker = StartWorker(leader, "pending_get");
  ASSERT_NE(worker, nullptr);
  ASSERT_TRUE(worker->WaitForLine("EVENT ready", kBound).ok()) << worker->output();
  Result refused = Reset(leader);
  EXPECT_EQ(refused.code, 1) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("muster task reset: PERMISSION_DENIED"));
  EXPECT_THAT(refused.output, HasSubstr("is CONNECTED (see muster status)"));
  Result status = RunMuster({"status", "--json", leader.leader_flag()});
  EXPECT_THAT(status.output, HasSubstr("\"TASKSTATE_CONNECTED\""));
  worker->Signal(SIGKILL);
  (void)Finish(*worker);
}

TEST(MusterTaskTest, BadTaskName_UsageError) {
  Result result = RunMuster({"task", "reset", "--leader=127.0.0.1:1", "worker/0"});
  EXPECT_EQ(result.code, kExitUsage) << result.output;
  EXPECT_THAT(result.output, HasSubstr("muster task reset: "));
  Result verb = RunMuster({"task", "restart", "--leader=127.0.0.1:1", "/job:worker/task:0"});
  EXPECT_EQ(verb.code, kExitUsage) << verb.output;
  EXPECT_THAT(verb.output, HasSubstr("unknown verb \"restart\""));
}

}  // namespace
}  // namespace muster::cli
