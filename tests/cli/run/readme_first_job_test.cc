// README.md's "Your first job in three terminals" with real processes: `muster serve --job
// worker=2 --recoverable-job worker` and two examples/worker processes with --hold. A worker
// stopped with Ctrl-C comes back by running it again; a worker can run twice in a row against
// the same leader; --hold holds until Ctrl-C, or for --hold_timeout.
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/cli/cli_process.h"

namespace muster::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kCtrlCExit = 128 + SIGINT;

std::unique_ptr<Subprocess> StartWorker(const Leader& leader, int task,
                                        std::vector<std::string> flags) {
  std::vector<std::string> argv = {MUSTER_WORKER_BIN, leader.leader_flag(),
                                   absl::StrCat("--task=", task)};
  argv.insert(argv.end(), flags.begin(), flags.end());
  auto worker = Subprocess::Start(std::move(argv));
  EXPECT_TRUE(worker.ok()) << worker.status();
  return worker.ok() ? *std::move(worker) : nullptr;
}

// Waits until `worker` holds after the barrier; returns the holding line.
std::string WaitHolding(Subprocess& worker) {
  auto line = worker.WaitForLine(" holding ", kBound);
  EXPECT_TRUE(line.ok()) << line.status() << "\n" << worker.output();
  return line.ok() ? *line : "";
}

TEST(ReadmeFirstJobTest, CtrlCOneWorker_ItsNextRunRejoinsAndTheOtherKeepsHolding) {
  Leader leader({"--job=worker=2", "--recoverable-job=worker"});
  ASSERT_TRUE(leader.ok());
  auto first = StartWorker(leader, 0, {"--hold"});
  auto second = StartWorker(leader, 1, {"--hold"});
  ASSERT_TRUE(first != nullptr && second != nullptr);
  WaitHolding(*first);
  WaitHolding(*second);

  second->Signal(SIGINT);
  EXPECT_EQ(Finish(*second).code, kCtrlCExit) << second->output();
  ASSERT_TRUE(leader.process().WaitForLine("/job:worker/task:1 failed", kBound).ok())
      << leader.process().output();

  auto again = StartWorker(leader, 1, {"--hold"});
  ASSERT_TRUE(again != nullptr);
  EXPECT_THAT(WaitHolding(*again), HasSubstr("/job:worker/task:1 holding until Ctrl-C"));
  EXPECT_THAT(again->output(), HasSubstr("got nccl/unique_id=nccl-id-0xC0FFEE"));
  EXPECT_THAT(again->output(),
              HasSubstr("rejoined: 1 other task(s) passed barrier ready_to_train already"));

  // Task 0 can come back the same way: it publishes the bootstrap value again.
  first->Signal(SIGINT);
  EXPECT_EQ(Finish(*first).code, kCtrlCExit) << first->output();
  ASSERT_TRUE(leader.process().WaitForLine("/job:worker/task:0 failed", kBound).ok())
      << leader.process().output();
  auto first_again = StartWorker(leader, 0, {"--hold"});
  ASSERT_TRUE(first_again != nullptr);
  WaitHolding(*first_again);
  EXPECT_THAT(first_again->output(), HasSubstr("published nccl/unique_id"));
  EXPECT_THAT(first_again->output(), HasSubstr("rejoined: 1 other task(s)"));

  Result status = RunMuster({"status", leader.leader_flag()});
  EXPECT_EQ(status.code, 0) << status.output;
  EXPECT_THAT(status.output, HasSubstr("/job:worker/task:0  CONNECTED"));
  EXPECT_THAT(status.output, HasSubstr("/job:worker/task:1  CONNECTED"));
  EXPECT_THAT(again->output() + first_again->output(), Not(HasSubstr("error callback")));
}

TEST(ReadmeFirstJobTest, AWorkerRunsTwiceInARowAgainstTheSameLeader) {
  Leader leader({"--job=worker=2", "--recoverable-job=worker"});
  ASSERT_TRUE(leader.ok());
  for (int run = 0; run < 2; ++run) {
    auto first = StartWorker(leader, 0, {});
    auto second = StartWorker(leader, 1, {});
    ASSERT_TRUE(first != nullptr && second != nullptr);
    Result task0 = Finish(*first);
    Result task1 = Finish(*second);
    EXPECT_EQ(task0.code, 0) << "run " << run << ":\n" << task0.output;
    EXPECT_EQ(task1.code, 0) << "run " << run << ":\n" << task1.output;
    EXPECT_THAT(task0.output, Not(HasSubstr("ALREADY_EXISTS")));
    EXPECT_THAT(task0.output, HasSubstr("passed barrier ready_to_train"));
    EXPECT_THAT(task1.output, HasSubstr("passed barrier ready_to_train"));
  }
}

TEST(ReadmeFirstJobTest, HoldWaitsUntilCtrlC) {
  Leader leader({"--job=worker=1"});
  ASSERT_TRUE(leader.ok());
  auto worker = StartWorker(leader, 0, {"--hold"});
  ASSERT_TRUE(worker != nullptr);
  EXPECT_THAT(WaitHolding(*worker), HasSubstr("holding until Ctrl-C or an error from the leader"));
  // Still holding a while later: no line, no exit.
  auto more = worker->WaitForLine("/job:worker/task:0", absl::Milliseconds(1500));
  EXPECT_EQ(more.status().code(), absl::StatusCode::kDeadlineExceeded) << worker->output();
  worker->Signal(SIGINT);
  EXPECT_EQ(Finish(*worker).code, kCtrlCExit) << worker->output();
}

TEST(ReadmeFirstJobTest, HoldTimeoutBoundsTheHold_ThenTheWorkerLeavesCleanly) {
  Leader leader({"--job=worker=1"});
  ASSERT_TRUE(leader.ok());
  auto worker = StartWorker(leader, 0, {"--hold", "--hold_timeout=500ms"});
  ASSERT_TRUE(worker != nullptr);
  EXPECT_THAT(WaitHolding(*worker), HasSubstr("holding for 500ms (--hold_timeout)"));
  Result result = Finish(*worker);
  EXPECT_EQ(result.code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("no error within 500ms; shut down"));
  ASSERT_TRUE(leader.process().WaitForLine("/job:worker/task:0 disconnected", kBound).ok())
      << leader.process().output();
}

}  // namespace
}  // namespace muster::cli
