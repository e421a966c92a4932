// Per-task certificates with real processes: `muster tls init --tasks worker=2` makes one
// certificate per task, and a leader whose CA was made so accepts a task's registration (a new
// incarnation included) only from the certificate naming that task. Another task's certificate,
// a node's and the muster command's are refused with PERMISSION_DENIED and change nothing (the
// task they tried to replace goes on and its job completes); the command still reads and writes
// keys. `muster run --leader` with a node certificate gives each task process its own.
#include <unistd.h>

#include <filesystem>
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

std::string Dir() { return absl::StrCat(::testing::TempDir(), "muster_task_certs_", ::getpid()); }

std::vector<std::string> TlsFlags(const std::string& node) {
  return {"--tls-cert=" + Dir() + "/" + node + ".pem", "--tls-key=" + Dir() + "/" + node + ".key",
          "--tls-ca=" + Dir() + "/ca.pem"};
}

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// An e2e worker process for task `task` holding the certificate `node` (a file name in Dir()).
std::unique_ptr<Subprocess> StartWorker(const Leader& leader, const std::string& node, int task,
                                        const std::string& scenario) {
  auto worker = Subprocess::Start(
      {"/usr/bin/env", "MUSTER_TLS_CERT=" + Dir() + "/" + node + ".pem",
       "MUSTER_TLS_KEY=" + Dir() + "/" + node + ".key", "MUSTER_TLS_CA=" + Dir() + "/ca.pem",
       MUSTER_E2E_WORKER_BIN, "--leader=" + leader.address(), absl::StrCat("--task=", task),
       "--tasks=2", "--scenario=" + scenario, "--register_timeout_ms=5000"});
  EXPECT_TRUE(worker.ok()) << worker.status();
  return worker.ok() ? *std::move(worker) : nullptr;
}

class MusterTaskCertificatesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::filesystem::remove_all(Dir());
    Result init = RunMuster({"tls", "init", Dir(), "--tasks=worker=2"});
    ASSERT_EQ(init.code, 0) << init.output;
    ASSERT_THAT(init.output, HasSubstr("task-worker-0 to task-worker-1"));
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(Dir()); }

  Leader leader_{Concat({"--job=worker=2"}, TlsFlags("leader"))};
};

TEST_F(MusterTaskCertificatesTest, OnlyATasksOwnCertificateActsAsIt) {
  ASSERT_TRUE(leader_.ok());
  auto task0 = StartWorker(leader_, "task-worker-0", 0, "barrier_wait");
  ASSERT_NE(task0, nullptr);
  ASSERT_TRUE(task0->WaitForLine("EVENT connect code=OK", kBound).ok()) << task0->output();
  // Registering task 0 again, with a new incarnation, would replace the live task (the
  // reference's restart): refused to every certificate but task 0's own.
  for (const char* other : {"task-worker-1", "worker", "cli"}) {
    auto intruder = StartWorker(leader_, other, 0, "shutdown");
    ASSERT_NE(intruder, nullptr);
    Result refused = Finish(*intruder);
    EXPECT_EQ(refused.code, 1) << other;
    EXPECT_THAT(refused.output, HasSubstr("EVENT connect code=PERMISSION_DENIED")) << other;
    EXPECT_THAT(refused.output, HasSubstr("acting as task /job:worker/task:0")) << other;
    EXPECT_THAT(refused.output, HasSubstr("a task may act only with its own")) << other;
  }
  // The muster command's certificate reads and writes keys.
  Result put = Kv(leader_, "put", Concat(TlsFlags("cli"), {"config/lr", "0.01"}));
  EXPECT_EQ(put.code, 0) << put.output;
  Result get = Kv(leader_, "get", Concat(TlsFlags("cli"), {"config/lr"}));
  EXPECT_EQ(get.output, "0.01\n");
  // Task 0 was never replaced: with task 1 (its own certificate) the barrier passes.
  auto task1 = StartWorker(leader_, "task-worker-1", 1, "barrier_wait");
  ASSERT_NE(task1, nullptr);
  for (Subprocess* task : {task0.get(), task1.get()}) {
    Result done = Finish(*task);
    EXPECT_EQ(done.code, 0) << done.output;
    EXPECT_THAT(done.output, HasSubstr("EVENT barrier failed_task=none code=OK"));
    EXPECT_THAT(done.output, Not(HasSubstr("EVENT error")));
  }
  EXPECT_TRUE(leader_.process().WaitForLine("refused a request acting as task", kBound).ok())
      << leader_.process().output();
}

// A launcher joining with a node certificate gives each task process the certificate naming
// its task; with the command's certificate, it may not run tasks at all.
TEST_F(MusterTaskCertificatesTest, LauncherWithANodeCertificate_GivesEachTaskItsOwn) {
  ASSERT_TRUE(leader_.ok());
  Result cli = RunMuster(
      Concat(Concat({"run", "--leader=" + leader_.address(), "--tasks=0-1"}, TlsFlags("cli")),
             {"--", MUSTER_RUN_WORKER_BIN}));
  EXPECT_EQ(cli.code, 1) << cli.output;
  EXPECT_THAT(cli.output, HasSubstr("PERMISSION_DENIED"));
  EXPECT_THAT(cli.output, HasSubstr("only a node certificate"));
  // Each task registers (READY) only with its own certificate; the key "go" lets them finish.
  auto run = StartMuster(
      Concat(Concat({"run", "--leader=" + leader_.address(), "--tasks=0-1"}, TlsFlags("worker")),
             {"--", MUSTER_RUN_WORKER_BIN}));
  ASSERT_NE(run, nullptr);
  // The two tasks register in either order: wait for two READY lines, then name both.
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(run->WaitForLine("READY task=", kBound).ok());
  EXPECT_THAT(run->output(), HasSubstr("READY task=0")) << run->output();
  EXPECT_THAT(run->output(), HasSubstr("READY task=1")) << run->output();
  Result go = Kv(leader_, "put", Concat(TlsFlags("cli"), {"go", "1"}));
  EXPECT_EQ(go.code, 0) << go.output;
  Result done = Finish(*run);
  EXPECT_EQ(done.code, 0) << done.output;
  EXPECT_THAT(done.output, HasSubstr("DONE task=1"));
  EXPECT_THAT(done.output, Not(HasSubstr("PERMISSION_DENIED")));
}

// A launcher whose certificate's directory lacks a task's certificate says so and starts nothing
// (the task would otherwise run with the node's certificate and be refused at every start).
TEST_F(MusterTaskCertificatesTest, LauncherWithoutATasksCertificate_RefusesToStart) {
  ASSERT_TRUE(leader_.ok());
  const std::string partial = Dir() + "_partial";
  std::filesystem::remove_all(partial);
  std::filesystem::create_directories(partial);
  for (const char* file : {"worker.pem", "worker.key", "ca.pem"}) {
    std::filesystem::copy_file(Dir() + "/" + file, partial + "/" + file);
  }
  Result run =
      RunMuster({"run", "--leader=" + leader_.address(), "--tasks=0-1",
                 "--tls-cert=" + partial + "/worker.pem", "--tls-key=" + partial + "/worker.key",
                 "--tls-ca=" + partial + "/ca.pem", "--", MUSTER_RUN_WORKER_BIN});
  EXPECT_EQ(run.code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr(partial + "/task-worker-0.pem"));
  EXPECT_THAT(run.output, Not(HasSubstr("started")));
  std::filesystem::remove_all(partial);
}

// A spare connects before it has a task, with the launcher's certificate, which a CA that binds
// tasks refuses: --spares is a usage error here, before anything starts.
TEST_F(MusterTaskCertificatesTest, SparesWithTaskBoundCertificates_RefusedBeforeStarting) {
  ASSERT_TRUE(leader_.ok());
  Result run =
      RunMuster(Concat(Concat({"run", "--leader=" + leader_.address(), "--tasks=0-1", "--spares=1"},
                              TlsFlags("worker")),
                       {"--", MUSTER_RUN_WORKER_BIN}));
  EXPECT_EQ(run.code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("--spares cannot be used when the job's CA binds tasks"));
  EXPECT_THAT(run.output, Not(HasSubstr("started")));
}

}  // namespace
}  // namespace muster::cli
