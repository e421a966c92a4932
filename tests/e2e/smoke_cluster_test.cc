// A real leader process and three real worker processes on 127.0.0.1: each worker connects
// asynchronously and registers. Every process is bounded in time and killed on failure.
#include <memory>
#include <string>
#include <vector>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/subprocess.h"

namespace muster {
namespace {

using ::muster::testing::Subprocess;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kBound = absl::Seconds(20);

// Starts a leader on a free port and returns it with its port.
std::unique_ptr<Subprocess> StartLeader(const std::string& jobs, std::string* port) {
  auto leader = Subprocess::Start({MUSTER_LEADER_BIN, "--jobs=" + jobs, "--port=0"});
  EXPECT_TRUE(leader.ok()) << leader.status();
  auto ready = (*leader)->WaitForLine("muster leader ready at 127.0.0.1:", kBound);
  EXPECT_TRUE(ready.ok()) << ready.status();
  if (!ready.ok()) return nullptr;
  std::string rest = ready->substr(ready->find("127.0.0.1:") + 10);
  *port = rest.substr(0, rest.find(' '));
  return std::move(*leader);
}

std::unique_ptr<Subprocess> StartWorker(const std::string& port, int task,
                                        const std::string& extra = "") {
  std::vector<std::string> argv = {MUSTER_WORKER_BIN, "--leader=127.0.0.1:" + port, "--job=worker",
                                   absl::StrCat("--task=", task)};
  if (!extra.empty()) argv.push_back(extra);
  auto worker = Subprocess::Start(argv);
  EXPECT_TRUE(worker.ok()) << worker.status();
  return std::move(*worker);
}

TEST(SmokeClusterTest, ThreeWorkers_AllRegister) {
  std::string port;
  auto leader = StartLeader("worker=3", &port);
  ASSERT_NE(leader, nullptr);
  std::vector<std::unique_ptr<Subprocess>> workers;
  for (int task = 0; task < 3; ++task) workers.push_back(StartWorker(port, task));
  for (int task = 0; task < 3; ++task) {
    auto code = workers[task]->Wait(kBound);
    ASSERT_TRUE(code.ok()) << code.status();
    EXPECT_EQ(*code, 0) << workers[task]->output();
    EXPECT_THAT(workers[task]->output(),
                HasSubstr(absl::StrCat("/job:worker/task:", task, " registered")));
    EXPECT_THAT(workers[task]->output(),
                HasSubstr(absl::StrCat("/job:worker/task:", task, " shut down")));
  }
  leader->Signal(SIGTERM);
  auto leader_code = leader->Wait(kBound);
  ASSERT_TRUE(leader_code.ok()) << leader_code.status();
  EXPECT_EQ(*leader_code, 0) << leader->output();
}

TEST(SmokeClusterTest, TaskOutsideTheCluster_FailsWithInvalidArgument) {
  std::string port;
  auto leader = StartLeader("worker=3", &port);
  ASSERT_NE(leader, nullptr);
  auto worker = StartWorker(port, 3);
  auto code = worker->Wait(kBound);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 1);
  EXPECT_THAT(worker->output(), HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(worker->output(), HasSubstr("/job:worker/task:3"));
}

TEST(SmokeClusterTest, WorkerStartedBeforeLeader_ConnectsOnceLeaderIsUp) {
  // Reserve a port by starting and stopping a leader, then start the worker first.
  std::string port;
  {
    auto probe = StartLeader("worker=1", &port);
    ASSERT_NE(probe, nullptr);
  }
  auto worker = StartWorker(port, 0, "--connect_timeout=15s");
  auto leader = Subprocess::Start({MUSTER_LEADER_BIN, "--jobs=worker=1", "--port=" + port});
  ASSERT_TRUE(leader.ok());
  auto code = worker->Wait(kBound);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << worker->output() << (*leader)->output();
}

TEST(SmokeClusterTest, NoLeader_WorkerGivesUpWithinItsTimeout) {
  auto worker = Subprocess::Start(
      {MUSTER_WORKER_BIN, "--leader=127.0.0.1:1", "--task=0", "--connect_timeout=500ms"});
  ASSERT_TRUE(worker.ok());
  auto code = (*worker)->Wait(absl::Seconds(10));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 1);
  // A worker waits for its leader (it may start first), and then says what it found.
  EXPECT_THAT((*worker)->output(), HasSubstr("DEADLINE_EXCEEDED"));
  EXPECT_THAT((*worker)->output(), HasSubstr("nothing listening at 127.0.0.1:1"));
  EXPECT_THAT((*worker)->output(), Not(HasSubstr("ip_connect")));
}

}  // namespace
}  // namespace muster
