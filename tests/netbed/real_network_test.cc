// Muster across hosts: a leader and workers in network namespaces of a NetBed (their own
// addresses, a bridge between them), with the faults of a real network made by nftables.
//  - bring-up: `muster run --leader` on three hosts registers, shares a key, passes a barrier and
//    shuts down, as on loopback;
//  - a host partitioned from the leader: its task is declared dead within the heartbeat timeout
//    plus 10%, and every other task is told within 50 ms of that verdict;
//  - the leader's host cut off while its process lives: every agent sees it within 1.25 of its
//    connection timeout, with UNAVAILABLE, and a pending call is answered, not left hanging;
//  - 2% loss on every host and up to 20 ms of jitter on every task's link, for 60 s with a 2 s
//    heartbeat timeout: nobody is declared dead, nobody reconnects;
//  - a recoverable task partitioned away rejoins as a new incarnation once the network heals;
//  - a host behind a slow, far link (100 ms each way, 1 MB/s) joins and gets a 4 MiB value
//    while the leader's other clients are served at once;
//  - mutual TLS and the token across hosts: a host of another CA can neither join nor read.
// Skipped, saying why, where namespaces cannot be made (not root); CI runs as root.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <absl/time/clock.h>
#include <absl/time/time.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/tools/run/subprocess.h"
#include "tests/netbed/net_bed.h"
#include "tests/testing/line_stamp.h"

namespace muster::netbed {
namespace {

using ::muster::testing::LineStampMicros;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kBound = absl::Seconds(30);
const std::string kLeader = NetBed::Address(0) + ":7400";
// A task's relay to the leader, on its own host (StartRelay).
const std::string kRelayed = "127.0.0.1:7500";

int64_t NowMicros() { return absl::ToUnixMicros(absl::Now()); }

// The microseconds of "at_us=N" in `line`; -1 when it has none.
int64_t AtMicros(const std::string& line) {
  size_t at = line.find("at_us=");
  int64_t us = -1;
  if (at == std::string::npos) return -1;
  std::string digits = line.substr(at + 6, line.find(' ', at) - at - 6);
  return absl::SimpleAtoi(digits, &us) ? us : -1;
}

class RealNetworkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = NetBed::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    auto bed = NetBed::Create(4);
    ASSERT_TRUE(bed.ok()) << bed.status();
    bed_ = *std::move(bed);
  }

  std::unique_ptr<Subprocess> Start(int host, std::vector<std::string> argv) {
    auto process = Subprocess::Start(bed_->In(host, std::move(argv)));
    EXPECT_TRUE(process.ok()) << process.status();
    return process.ok() ? *std::move(process) : nullptr;
  }

  // `muster serve` in host 0 with a 2 s heartbeat timeout.
  std::unique_ptr<Subprocess> StartLeader(int tasks) {
    auto leader =
        Start(0, {MUSTER_CLI_BIN, "serve", absl::StrCat("--job=worker=", tasks),
                  "--host=" + NetBed::Address(0), "--port=7400", "--heartbeat-timeout=2s"});
    if (leader == nullptr) return nullptr;
    auto ready = leader->WaitForLine("muster leader ready at ", kBound);
    EXPECT_TRUE(ready.ok()) << ready.status();
    return ready.ok() ? std::move(leader) : nullptr;
  }

  // A relay in `host` from kRelayed to the leader.
  std::unique_ptr<Subprocess> StartRelay(int host, int delay_ms, int jitter_ms) {
    auto relay = Start(host, NetBed::Relay(kRelayed, kLeader, delay_ms, jitter_ms));
    if (relay == nullptr) return nullptr;
    auto ready = relay->WaitForLine("relay ready", kBound);
    EXPECT_TRUE(ready.ok()) << ready.status();
    return ready.ok() ? std::move(relay) : nullptr;
  }

  // An e2e worker for task `task` in host `host` (a later --leader flag wins).
  std::unique_ptr<Subprocess> StartWorker(int host, int task, int tasks,
                                          const std::string& scenario,
                                          std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {MUSTER_E2E_WORKER_BIN, "--leader=" + kLeader,
                                     absl::StrCat("--task=", task), absl::StrCat("--tasks=", tasks),
                                     "--scenario=" + scenario};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return Start(host, std::move(argv));
  }

  // A host behind a slow, far link (100 ms each way, 1 MB/s) joins, passes the barriers and
  // gets a 4 MiB value; meanwhile the leader answers its other clients as fast as before.
  void RunSlowFarHost(const std::vector<std::string>& far_flags);

  std::unique_ptr<NetBed> bed_;
};

TEST_F(RealNetworkTest, BringUp_ThreeHostsJoinWithMusterRunAndFinish) {
  auto leader = StartLeader(3);
  ASSERT_NE(leader, nullptr);
  std::vector<std::unique_ptr<Subprocess>> hosts;
  for (int host = 1; host <= 3; ++host) {
    hosts.push_back(Start(host, {MUSTER_CLI_BIN, "run", "--leader=" + kLeader,
                                 absl::StrCat("--tasks=", host - 1), "--", MUSTER_RUN_WORKER_BIN}));
    ASSERT_NE(hosts.back(), nullptr);
  }
  for (int task = 0; task < 3; ++task) {
    auto ready = hosts[task]->WaitForLine(absl::StrCat("READY task=", task), kBound);
    ASSERT_TRUE(ready.ok()) << ready.status();
  }
  // From the leader's host: the key the tasks wait for, then each finishes on its own host.
  auto go = Start(0, {MUSTER_CLI_BIN, "kv", "put", "--leader=" + kLeader, "go", "1"});
  ASSERT_NE(go, nullptr);
  EXPECT_EQ(go->Wait(kBound).value_or(-1), 0) << go->output();
  for (int task = 0; task < 3; ++task) {
    EXPECT_EQ(hosts[task]->Wait(kBound).value_or(-1), 0) << hosts[task]->output();
    EXPECT_THAT(hosts[task]->output(), HasSubstr(absl::StrCat("DONE task=", task)));
  }
}

TEST_F(RealNetworkTest, HostPartitionedFromTheLeader_DeclaredDeadInTimeOthersToldAtOnce) {
  auto leader = StartLeader(3);
  ASSERT_NE(leader, nullptr);
  std::vector<std::unique_ptr<Subprocess>> tasks;
  for (int task = 0; task < 3; ++task) {
    tasks.push_back(StartWorker(task + 1, task, 3, "wait_error", {"--wait_ms=15000"}));
    ASSERT_NE(tasks.back(), nullptr);
    ASSERT_TRUE(tasks.back()->WaitForLine("EVENT ready", kBound).ok()) << tasks.back()->output();
  }
  absl::SleepFor(absl::Seconds(1));         // a few heartbeats on the wire
  ASSERT_TRUE(bed_->Partition(0, 3).ok());  // task 2's host from the leader's
  const int64_t cut = NowMicros();          // once the rules are in place
  auto verdict = leader->WaitForLine("/job:worker/task:2 stale", kBound);
  ASSERT_TRUE(verdict.ok()) << verdict.status() << leader->output();
  const int64_t declared = LineStampMicros(*verdict);
  ASSERT_GT(declared, 0) << *verdict;
  const int64_t after_ms = (declared - cut) / 1000;
  std::printf("partition -> verdict: %lld ms (heartbeat timeout 2000 ms)\n",
              static_cast<long long>(after_ms));
  EXPECT_GE(after_ms, 900);   // not before the timeout could pass (beats every ~1 s)
  EXPECT_LE(after_ms, 2200);  // the heartbeat timeout plus 10%
  for (int task = 0; task < 2; ++task) {
    auto told = tasks[task]->WaitForLine("EVENT error", kBound);
    ASSERT_TRUE(told.ok()) << told.status() << tasks[task]->output();
    EXPECT_THAT(*told, HasSubstr("/job:worker/task:2"));
    const int64_t lag_ms = (AtMicros(*told) - declared) / 1000;
    std::printf("verdict -> task %d told: %lld ms\n", task, static_cast<long long>(lag_ms));
    // The verdict's stamp has millisecond resolution and is printed after the fact (a task may
    // be told before the leader's line is stamped).
    EXPECT_LE(lag_ms, 50) << *told;
    EXPECT_GE(lag_ms, -250) << *told;
  }
}

TEST_F(RealNetworkTest, LeadersHostCutOff_AgentsSeeItWithinTheirConnectionTimeout) {
  auto leader = StartLeader(2);
  ASSERT_NE(leader, nullptr);
  const std::vector<std::string> timeouts = {"--heartbeat_timeout_ms=2000",
                                             "--connection_timeout_ms=2000", "--wait_ms=15000"};
  auto waiting = StartWorker(1, 0, 2, "wait_error", timeouts);
  auto getting = StartWorker(2, 1, 2, "pending_get", timeouts);
  ASSERT_NE(waiting, nullptr);
  ASSERT_NE(getting, nullptr);
  for (Subprocess* task : {waiting.get(), getting.get()}) {
    ASSERT_TRUE(task->WaitForLine("EVENT ready", kBound).ok()) << task->output();
  }
  absl::SleepFor(absl::Seconds(1));
  ASSERT_TRUE(bed_->Isolate(0).ok());  // the leader process lives; nothing reaches it
  const int64_t cut = NowMicros();
  for (Subprocess* task : {waiting.get(), getting.get()}) {
    auto told = task->WaitForLine("EVENT error", kBound);
    ASSERT_TRUE(told.ok()) << told.status() << task->output();
    EXPECT_THAT(*told, HasSubstr("code=UNAVAILABLE"));
    const int64_t after_ms = (AtMicros(*told) - cut) / 1000;
    std::printf("leader cut off -> agent knows: %lld ms (connection timeout 2000 ms)\n",
                static_cast<long long>(after_ms));
    EXPECT_LE(after_ms, 2600);  // 1.25 connection timeouts (docs/agent.md), 100 ms to schedule
  }
  // The pending get is answered, not left waiting for a leader that cannot answer (its line
  // may come before the error's, which the wait above read past).
  if (getting->output().find("EVENT get ") == std::string::npos) {
    ASSERT_TRUE(getting->WaitForLine("EVENT get ", kBound).ok()) << getting->output();
  }
  EXPECT_THAT(getting->output(), HasSubstr("EVENT get code=UNAVAILABLE"));
}

// Every task reaches the leader through a relay on its own host that adds up to 20 ms of
// jitter each way, and every host drops 2% of what it sends, for a minute.
TEST_F(RealNetworkTest, TwoPercentLossAndJitterForAMinute_NobodyDeclaredDead) {
  auto leader = StartLeader(3);
  ASSERT_NE(leader, nullptr);
  std::vector<std::unique_ptr<Subprocess>> relays, tasks;
  for (int task = 0; task < 3; ++task) {
    relays.push_back(StartRelay(task + 1, /*delay_ms=*/0, /*jitter_ms=*/20));
    ASSERT_NE(relays.back(), nullptr);
  }
  for (int host = 0; host < 4; ++host) ASSERT_TRUE(bed_->SetLoss(host, 2).ok());
  for (int task = 0; task < 3; ++task) {
    tasks.push_back(
        StartWorker(task + 1, task, 3, "wait_error", {"--wait_ms=60000", "--leader=" + kRelayed}));
    ASSERT_NE(tasks.back(), nullptr);
  }
  for (auto& task : tasks) {
    EXPECT_EQ(task->Wait(absl::Seconds(90)).value_or(-1), 1) << task->output();  // 1: no error
    EXPECT_THAT(task->output(), HasSubstr("EVENT connect code=OK"));
    EXPECT_THAT(task->output(), HasSubstr("EVENT no error"));
    EXPECT_THAT(task->output(), Not(HasSubstr("EVENT error")));
  }
  (void)leader->WaitForLine("(nothing: read what the leader printed)", absl::Milliseconds(300));
  EXPECT_THAT(leader->output(), Not(HasSubstr(" stale")));
  // Each task registered once: no reconnect.
  const std::string& log = leader->output();
  int registered = 0;
  for (size_t at = log.find(" registered"); at != std::string::npos;
       at = log.find(" registered", at + 1)) {
    ++registered;
  }
  EXPECT_EQ(registered, 3) << log;
}

// A recoverable task partitioned away is declared dead; its failure is not the others' (it is
// recoverable), and once the network heals a new process of the task registers as a new
// incarnation while the others go on untouched.
TEST_F(RealNetworkTest, RecoverableTaskPartitioned_RejoinsAsANewIncarnationAfterHealing) {
  auto leader = StartLeader(3);
  ASSERT_NE(leader, nullptr);
  std::vector<std::unique_ptr<Subprocess>> tasks;
  for (int task = 0; task < 2; ++task) {
    tasks.push_back(StartWorker(task + 1, task, 3, "wait_error", {"--wait_ms=12000"}));
    ASSERT_NE(tasks.back(), nullptr);
  }
  auto lost = StartWorker(3, 2, 3, "wait_error", {"--wait_ms=12000", "--recoverable"});
  ASSERT_NE(lost, nullptr);
  for (Subprocess* task : {tasks[0].get(), tasks[1].get(), lost.get()}) {
    ASSERT_TRUE(task->WaitForLine("EVENT ready", kBound).ok()) << task->output();
  }
  auto first = leader->WaitForLine("/job:worker/task:2 registered", kBound);
  ASSERT_TRUE(first.ok()) << leader->output();
  ASSERT_TRUE(bed_->Partition(0, 3).ok());
  ASSERT_TRUE(leader->WaitForLine("/job:worker/task:2 stale", kBound).ok()) << leader->output();
  lost.reset();  // the old process goes (killed) before the network heals
  ASSERT_TRUE(bed_->HealAll().ok());
  auto again = StartWorker(3, 2, 3, "wait_error", {"--wait_ms=3000", "--recoverable"});
  ASSERT_NE(again, nullptr);
  ASSERT_TRUE(again->WaitForLine("EVENT connect code=OK", kBound).ok()) << again->output();
  auto second = leader->WaitForLine("/job:worker/task:2 registered", kBound);
  ASSERT_TRUE(second.ok()) << leader->output();
  auto incarnation = [](const std::string& line) { return line.substr(line.find("incarnation=")); };
  EXPECT_NE(incarnation(*first), incarnation(*second));
  for (auto& task : tasks) {
    EXPECT_EQ(task->Wait(kBound).value_or(-1), 1) << task->output();  // 1: no error came
    EXPECT_THAT(task->output(), HasSubstr("EVENT no error"));
  }
}

void RealNetworkTest::RunSlowFarHost(const std::vector<std::string>& far_flags) {
  auto leader = StartLeader(3);
  ASSERT_NE(leader, nullptr);
  ASSERT_TRUE(bed_->SetRate(3, 1'000'000).ok());
  auto relay = StartRelay(3, /*delay_ms=*/100, /*jitter_ms=*/0);
  ASSERT_NE(relay, nullptr);
  const std::string bytes = absl::StrCat("--bootstrap_bytes=", 4 << 20);
  std::vector<std::unique_ptr<Subprocess>> tasks;
  tasks.push_back(StartWorker(1, 0, 3, "full", {bytes}));
  tasks.push_back(StartWorker(2, 1, 3, "full", {bytes}));
  std::vector<std::string> far = {bytes, "--leader=" + kRelayed};
  far.insert(far.end(), far_flags.begin(), far_flags.end());
  tasks.push_back(StartWorker(3, 2, 3, "full", far));
  const absl::Time start = absl::Now();
  // While the value crawls to the far host, a near client's calls are served at once.
  ASSERT_TRUE(tasks[1]->WaitForLine("EVENT nccl", kBound).ok()) << tasks[1]->output();
  absl::Duration slowest;
  int calls = 0;
  while (tasks[2]->output().find("EVENT nccl") == std::string::npos &&
         absl::Now() - start < kBound && calls < 40) {
    const absl::Time begin = absl::Now();
    auto get = Start(
        1, {MUSTER_CLI_BIN, "kv", "get", "--leader=" + kLeader, "--wait=false", "nccl/absent"});
    ASSERT_NE(get, nullptr);
    EXPECT_EQ(get->Wait(kBound).value_or(-1), 1) << get->output();  // NOT_FOUND, answered
    slowest = std::max(slowest, absl::Now() - begin);
    ++calls;
    (void)tasks[2]->WaitForLine("EVENT nccl", absl::Milliseconds(1));
  }
  std::printf("near client during the far transfer: %d calls, slowest %s\n", calls,
              absl::FormatDuration(slowest).c_str());
  EXPECT_GT(calls, 0);
  EXPECT_LT(slowest, absl::Seconds(1));  // the whole transfer takes over 4 s
  for (auto& task : tasks) {
    EXPECT_EQ(task->Wait(kBound).value_or(-1), 0) << task->output();
    EXPECT_THAT(task->output(), HasSubstr("EVENT barrier ok"));
  }
  EXPECT_THAT(tasks[2]->output(), HasSubstr(absl::StrCat("nccl bytes=", 4 << 20, " intact")));
  std::printf("far host done after %s\n", absl::FormatDuration(absl::Now() - start).c_str());
}

TEST_F(RealNetworkTest, SlowFarHost_JoinsGetsFourMiBAndDoesNotSlowTheOthers) { RunSlowFarHost({}); }

// The same with the far agent's own 2 s heartbeat timeout: beats go one-way and CAF's
// connection timeout (2 s) watches the leader while one frame takes 4 s to arrive.
TEST_F(RealNetworkTest, SlowFarHostWithOneWayBeats_JoinsAndGetsFourMiB) {
  RunSlowFarHost({"--heartbeat_timeout_ms=2000"});
}

// Mutual TLS and the job token across hosts: the job's hosts join and finish; a host with a
// certificate of another CA can neither join nor read.
TEST_F(RealNetworkTest, TlsAndTokenAcrossHosts_ForeignCertificateGetsNothing) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "muster_netbed_tls_", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* ca : {"job", "foreign"}) {
    auto init = Subprocess::Start({MUSTER_CLI_BIN, "tls", "init", dir + "/" + ca});
    ASSERT_TRUE(init.ok());
    ASSERT_EQ((*init)->Wait(kBound).value_or(-1), 0) << (*init)->output();
  }
  const std::string token = dir + "/job.token";
  std::ofstream(token) << "netbed-job-token-0123456789\n";
  auto tls = [&](const std::string& ca, const std::string& node) {
    return std::vector<std::string>{"/usr/bin/env",
                                    "MUSTER_TLS_CERT=" + dir + "/" + ca + "/" + node + ".pem",
                                    "MUSTER_TLS_KEY=" + dir + "/" + ca + "/" + node + ".key",
                                    "MUSTER_TLS_CA=" + dir + "/" + ca + "/ca.pem"};
  };
  std::vector<std::string> serve = tls("job", "leader");
  serve.insert(serve.end(),
               {MUSTER_CLI_BIN, "serve", "--job=worker=2", "--host=" + NetBed::Address(0),
                "--port=7400", "--token-file=" + token});
  auto leader = Start(0, serve);
  ASSERT_NE(leader, nullptr);
  ASSERT_TRUE(leader->WaitForLine("muster leader ready at ", kBound).ok()) << leader->output();
  std::vector<std::unique_ptr<Subprocess>> tasks;
  for (int task = 0; task < 2; ++task) {
    std::vector<std::string> argv = tls("job", "worker");
    argv.insert(argv.end(),
                {MUSTER_E2E_WORKER_BIN, "--leader=" + kLeader, absl::StrCat("--task=", task),
                 "--tasks=2", "--scenario=full", "--token_file=" + token});
    tasks.push_back(Start(task + 1, argv));
    ASSERT_NE(tasks.back(), nullptr);
  }
  for (auto& task : tasks) {
    EXPECT_EQ(task->Wait(kBound).value_or(-1), 0) << task->output();
    EXPECT_THAT(task->output(), HasSubstr("EVENT barrier ok"));
  }
  std::vector<std::string> intruder = tls("foreign", "worker");
  intruder.insert(intruder.end(), {MUSTER_E2E_WORKER_BIN, "--leader=" + kLeader, "--task=0",
                                   "--tasks=2", "--scenario=shutdown", "--token_file=" + token});
  auto outsider = Start(3, intruder);
  ASSERT_NE(outsider, nullptr);
  EXPECT_EQ(outsider->Wait(kBound).value_or(-1), 1) << outsider->output();
  EXPECT_THAT(outsider->output(), HasSubstr("EVENT connect code=UNAVAILABLE"));
  std::vector<std::string> read = tls("foreign", "cli");
  read.insert(read.end(), {MUSTER_CLI_BIN, "kv", "get", "--leader=" + kLeader,
                           "--token-file=" + token, "--wait=false", "nccl/unique_id"});
  auto reader = Start(3, read);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->Wait(kBound).value_or(-1), 1) << reader->output();
  EXPECT_THAT(reader->output(), HasSubstr("certificate verify failed"));
  EXPECT_THAT(reader->output(), Not(HasSubstr("id-42")));
  std::filesystem::remove_all(dir);
}

// PyTorch across hosts: 4 hosts × 2 gloo ranks join through muster:// (rank 0 hosts the
// leader; the other hosts reach it through a relay adding 5 ms each way) and all_reduce; when
// one host's ranks are killed (kill -9), every other rank ends within the heartbeat timeout
// plus 1 s, naming a killed rank.
TEST_F(RealNetworkTest, PyTorchAcrossHosts_KilledHostsRanksEndTheOthersNamingThem) {
#ifndef MUSTER_PYTHON_DIR
  GTEST_SKIP() << "the muster Python package is not built";
#else
  std::vector<std::unique_ptr<Subprocess>> relays;
  for (int host = 1; host < 4; ++host) {
    auto relay = Start(host, NetBed::Relay("127.0.0.1:29500", NetBed::Address(0) + ":29500",
                                           /*delay_ms=*/5));
    ASSERT_NE(relay, nullptr);
    ASSERT_TRUE(relay->WaitForLine("relay ready", kBound).ok()) << relay->output();
    relays.push_back(std::move(relay));
  }
  const int world = 8;
  std::vector<std::unique_ptr<Subprocess>> ranks(world);
  for (int rank = world - 1; rank >= 0; --rank) {  // rank 0, which hosts the leader, last
    const int host = rank / 2;
    const std::string url = absl::StrCat("muster://", host == 0 ? NetBed::Address(0) : "127.0.0.1",
                                         ":29500?heartbeat_timeout=2");
    ranks[rank] =
        Start(host, {"/usr/bin/env", "PYTHONPATH=" MUSTER_PYTHON_DIR, "GLOO_SOCKET_IFNAME=eth0",
                     "/usr/bin/python3", MUSTER_TORCH_RANK, url, absl::StrCat(rank),
                     absl::StrCat(world), host == 3 ? "victim" : "blocked"});
    ASSERT_NE(ranks[rank], nullptr);
  }
  for (int rank = 0; rank < world; ++rank) {
    auto ready = ranks[rank]->WaitForLine("ready", absl::Seconds(120));
    ASSERT_TRUE(ready.ok()) << "rank " << rank << ": " << ranks[rank]->output();
  }
  absl::SleepFor(absl::Milliseconds(500));  // the others wait in their all_reduce by now
  const absl::Time kill = absl::Now();
  ranks[6]->Signal(SIGKILL);
  ranks[7]->Signal(SIGKILL);
  for (int rank = 0; rank < 6; ++rank) {
    auto code = ranks[rank]->Wait(absl::Seconds(60));
    const absl::Duration after = absl::Now() - kill;
    const std::string& out = ranks[rank]->output();
    std::printf("rank %d ended %s after the kill\n", rank, absl::FormatDuration(after).c_str());
    EXPECT_NE(code.value_or(0), 0) << out;
    EXPECT_THAT(out, Not(HasSubstr("all_reduce returned")));
    EXPECT_TRUE(out.find("rank 6") != std::string::npos || out.find("rank 7") != std::string::npos)
        << out;
    EXPECT_LT(after, absl::Seconds(3)) << out;  // heartbeat timeout (2 s) + 1 s
  }
#endif
}

}  // namespace
}  // namespace muster::netbed
