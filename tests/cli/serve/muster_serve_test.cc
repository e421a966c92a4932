// `muster serve` as a real process: the ready line, task events from real worker processes,
// clean shutdown on SIGTERM and SIGINT, and the exit codes of bad starts.
#include <csignal>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/cli/cli_process.h"

namespace muster::cli {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

// Runs the example worker: it connects, registers /job:worker/task:<task> and exits.
Result RunWorker(const Leader& leader, int task) {
  auto worker =
      Subprocess::Start({MUSTER_E2E_WORKER_BIN, "--leader=" + leader.address(), "--job=worker",
                         absl::StrCat("--task=", task), "--scenario=exit_without_shutdown"});
  EXPECT_TRUE(worker.ok()) << worker.status();
  if (!worker.ok()) return {};
  return Finish(**worker);
}

TEST(MusterServeTest, ReadyLine_NamesAddressAndIncarnation) {
  Leader leader({"--job", "worker=2"});
  ASSERT_TRUE(leader.ok());
  EXPECT_THAT(leader.address(), ContainsRegex("^127\\.0\\.0\\.1:[0-9]+$"));
  EXPECT_THAT(leader.process().output(),
              ContainsRegex("muster leader ready at 127\\.0\\.0\\.1:[0-9]+ "
                            "incarnation=0x[0-9a-f]{16}\n"));
}

TEST(MusterServeTest, Sigterm_ExitsZero) {
  Leader leader({"--job=worker=1"});
  ASSERT_TRUE(leader.ok());
  leader.process().Signal(SIGTERM);
  Result result = Finish(leader.process());
  EXPECT_EQ(result.code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("muster leader shutting down (signal 15)"));
}

TEST(MusterServeTest, Sigint_ExitsZero) {
  Leader leader({"--job=worker=1"});
  ASSERT_TRUE(leader.ok());
  leader.process().Signal(SIGINT);
  Result result = Finish(leader.process());
  EXPECT_EQ(result.code, 0) << result.output;
}

TEST(MusterServeTest, WorkerRegistersAndExits_LogsRegisteredThenFailed) {
  Leader leader({"--job=worker=2"});
  ASSERT_TRUE(leader.ok());
  Result worker = RunWorker(leader, 1);
  ASSERT_EQ(worker.code, 0) << worker.output;
  auto registered = leader.process().WaitForLine("/job:worker/task:1 registered", kBound);
  ASSERT_TRUE(registered.ok()) << registered.status();
  EXPECT_THAT(*registered, ContainsRegex("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+.* "
                                         "/job:worker/task:1 registered incarnation=0x"));
  auto failed = leader.process().WaitForLine("/job:worker/task:1 failed", kBound);
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_THAT(*failed, HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(*failed, HasSubstr("connection to worker lost"));
}

TEST(MusterServeTest, TaskThatStopsHeartbeating_IsLoggedStale) {
  // The grace period keeps the lost connection from failing the task first.
  Leader leader({"--job=worker=1", "--heartbeat-timeout=500ms", "--connection-loss-grace=60s"});
  ASSERT_TRUE(leader.ok());
  ASSERT_EQ(RunWorker(leader, 0).code, 0);
  auto stale = leader.process().WaitForLine("/job:worker/task:0 stale", kBound);
  ASSERT_TRUE(stale.ok()) << stale.status();
  EXPECT_THAT(*stale, HasSubstr("heartbeat timeout"));
}

TEST(MusterServeTest, PortInUse_ExitsOneNamingThePort) {
  Leader first({"--job=worker=1"});
  ASSERT_TRUE(first.ok());
  std::string port = first.address().substr(first.address().find(':') + 1);
  Result second = RunMuster({"serve", "--job=worker=1", "--port", port});
  EXPECT_EQ(second.code, 1);
  EXPECT_THAT(second.output, HasSubstr("muster serve: UNAVAILABLE"));
  EXPECT_THAT(second.output, HasSubstr(port));
  EXPECT_THAT(second.output, HasSubstr("--port"));
}

TEST(MusterServeTest, ShutdownWhileAGetWaits_TheWaiterFailsAtOnce) {
  Leader leader({"--job=worker=1"});
  ASSERT_TRUE(leader.ok());
  auto waiter = StartMuster({"kv", "get", leader.leader_flag(), "--wait", "--timeout=60s", "k"});
  ASSERT_NE(waiter, nullptr);
  ASSERT_TRUE(waiter->WaitForLine("waiting for k", kBound).ok()) << waiter->output();
  leader.process().Signal(SIGTERM);
  EXPECT_EQ(Finish(leader.process()).code, 0);
  Result get = Finish(*waiter);
  EXPECT_EQ(get.code, 1) << get.output;
  EXPECT_THAT(get.output, HasSubstr("muster kv get: "));
}

TEST(MusterServeTest, WireLimits_BadValuesAreUsageErrorsGoodOnesServe) {
  Result tiny = RunMuster({"serve", "--job=worker=1", "--max-frame-size=1000"});
  EXPECT_EQ(tiny.code, 2);
  EXPECT_THAT(tiny.output, HasSubstr("--max-frame-size below 64 KiB"));
  Result negative = RunMuster({"serve", "--job=worker=1", "--handshake-timeout=-1s"});
  EXPECT_EQ(negative.code, 2);
  EXPECT_THAT(negative.output, HasSubstr("--handshake-timeout may not be negative"));
  Leader leader({"--job=worker=1", "--max-frame-size=1048576", "--handshake-timeout=2s"});
  ASSERT_TRUE(leader.ok());
  EXPECT_EQ(RunWorker(leader, 0).code, 0);
}

TEST(MusterServeTest, StoreLimits_WriteOverTheTotalRefusedSmallerOnesStored) {
  Leader leader({"--job=worker=1", "--max-store-size=100", "--max-value-size=80"});
  ASSERT_TRUE(leader.ok());
  Result big = Kv(leader, "put", {"blob", std::string(90, 'x')});
  EXPECT_EQ(big.code, 1);
  EXPECT_THAT(big.output, HasSubstr("RESOURCE_EXHAUSTED"));
  ASSERT_EQ(Kv(leader, "put", {"a", std::string(60, 'x')}).code, 0);
  Result over = Kv(leader, "put", {"b", std::string(60, 'y')});
  EXPECT_EQ(over.code, 1);
  EXPECT_THAT(over.output, HasSubstr("over its limit of 100 bytes"));
  EXPECT_EQ(Kv(leader, "get", {"b"}).code, 1);
  ASSERT_EQ(Kv(leader, "rm", {"a"}).code, 0);
  EXPECT_EQ(Kv(leader, "put", {"b", std::string(60, 'y')}).code, 0);
}

TEST(MusterServeTest, RepeatedJobFlags_ConfigureEveryJob) {
  Leader leader({"--job", "worker=2", "--job", "ps=1", "--job=eval=1"});
  ASSERT_TRUE(leader.ok());
  auto waiting = leader.process().WaitForLine("waiting for 4 tasks", kBound);
  ASSERT_TRUE(waiting.ok()) << waiting.status();
  EXPECT_THAT(*waiting, HasSubstr("eval/0, ps/0, worker/[0-1]"));
}

}  // namespace
}  // namespace muster::cli
