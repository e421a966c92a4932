// Standby leaders on etcd, for real: a 3-member etcd cluster, two `muster serve --ha-etcd`
// processes of one HA job, and worker processes (restart_worker) given both leaders' addresses.
// The active leader is killed with SIGKILL: the standby takes over once its lease ends, the
// workers' blocked calls complete against it, every acknowledged write is there exactly once,
// and no error callback fires.
#include <unistd.h>

#include <csignal>
#include <random>

#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/e2e/e2e_fixture.h"
#include "tests/net/ha/etcd_cluster.h"

namespace muster::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class HaFailoverE2eTest : public E2eTest {
 protected:
  void SetUp() override {
    auto cluster = EtcdCluster::Start();
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    etcd_ = *std::move(cluster);
    name_ = absl::StrCat("job-", getpid(), "-",
                         ::testing::UnitTest::GetInstance()->current_test_info()->line());
  }

  // Starts (or starts again) leader `i` on its port (0 the first time) and returns its output's
  // ready line.
  void StartHaLeader(int i, const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {MUSTER_CLI_BIN, "serve", "--ha-etcd=" + etcd_->endpoints(),
                                     "--ha-name=" + name_, absl::StrCat("--port=", ports_[i])};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto leader = Subprocess::Start(argv);
    ASSERT_TRUE(leader.ok()) << leader.status();
    leaders_[i] = *std::move(leader);
    auto ready = leaders_[i]->WaitForLine("muster leader ready at 127.0.0.1:", kBound);
    ASSERT_TRUE(ready.ok()) << ready.status() << leaders_[i]->output();
    std::string rest = ready->substr(ready->find("127.0.0.1:") + 10);
    ports_[i] = std::stoi(rest.substr(0, rest.find(' ')));
  }

  void StartBoth(const std::vector<std::string>& flags) {
    StartHaLeader(0, flags);
    StartHaLeader(1, flags);
    address_ = absl::StrCat("127.0.0.1:", ports_[0], ",127.0.0.1:", ports_[1]);
  }

  // Which leader serves: waits until one says it took over once more than it had said.
  int Active(absl::Duration bound = kBound) {
    const absl::Time end = absl::Now() + bound;
    while (absl::Now() < end) {
      for (int i = 0; i < 2; ++i) {
        if (leaders_[i] && Takeovers(i) > takeovers_[i]) {
          takeovers_[i] = Takeovers(i);
          return i;
        }
      }
      for (int i = 0; i < 2; ++i) {
        if (leaders_[i]) (void)leaders_[i]->WaitForLine("\n", absl::Milliseconds(20));
      }
    }
    ADD_FAILURE() << "no leader took over; outputs:\n"
                  << (leaders_[0] ? leaders_[0]->output() : "") << "\n---\n"
                  << (leaders_[1] ? leaders_[1]->output() : "");
    return -1;
  }

  // Whether leader `i` printed `text`, read as its output comes (WaitForLine has moved past
  // the lines Active() read).
  bool Saw(int i, const std::string& text) {
    const absl::Time end = absl::Now() + kBound;
    while (leaders_[i]->output().find(text) == std::string::npos && absl::Now() < end) {
      (void)leaders_[i]->WaitForLine("\n", absl::Milliseconds(50));
    }
    return leaders_[i]->output().find(text) != std::string::npos;
  }

  int Takeovers(int i) {
    const std::string& out = leaders_[i]->output();
    int count = 0;
    for (size_t at = out.find("active: serving"); at != std::string::npos;
         at = out.find("active: serving", at + 1)) {
      ++count;
    }
    return count;
  }

  void Kill(int i) {
    leaders_[i]->Signal(SIGKILL);
    (void)leaders_[i]->Wait(kBound);
    leaders_[i].reset();
    takeovers_[i] = 0;
  }

  std::unique_ptr<EtcdCluster> etcd_;
  std::string name_;
  int ports_[2] = {0, 0};
  int takeovers_[2] = {0, 0};
  std::unique_ptr<Subprocess> leaders_[2];
};

const std::vector<std::string> kFlags = {"--heartbeat-timeout=2s", "--reconnect-window=10s",
                                         "--ha-lease-ttl=2s"};

TEST_F(HaFailoverE2eTest, ActiveKilled_StandbyTakesOver_BlockedGetAndBarrierComplete) {
  std::vector<std::string> flags = kFlags;
  flags.push_back("--job=worker=4");
  StartBoth(flags);
  int active = Active();
  ASSERT_GE(active, 0);
  EXPECT_TRUE(Saw(1 - active, "standby: the active leader is")) << leaders_[1 - active]->output();
  Subprocess* getter = StartProgram(MUSTER_RESTART_WORKER_BIN, 0, "get");
  std::vector<Subprocess*> waiting;
  for (int task : {1, 2, 3}) {
    waiting.push_back(StartProgram(MUSTER_RESTART_WORKER_BIN, task, "barrier"));
  }
  ASSERT_TRUE(getter->WaitForLine("EVENT waiting get", kBound).ok()) << getter->output();
  for (Subprocess* worker : waiting) {
    ASSERT_TRUE(worker->WaitForLine("EVENT waiting barrier", kBound).ok()) << worker->output();
  }
  absl::SleepFor(absl::Milliseconds(200));  // the calls reach the leader
  const absl::Time killed = absl::Now();
  Kill(active);
  int next = Active();
  ASSERT_EQ(next, 1 - active);
  const absl::Duration failover = absl::Now() - killed;
  EXPECT_THAT(leaders_[next]->output(), HasSubstr("recovered 4 tasks (4 connected"));
  EXPECT_LT(failover, absl::Seconds(6)) << "lease TTL 2s";
  Subprocess* put = StartProgram(MUSTER_RESTART_WORKER_BIN, 9, "put", {"--value=after-failover"});
  ExpectExit(put, 0);
  ExpectGetAndBarrierCompleted(getter, waiting, put, "after-failover");
}

TEST_F(HaFailoverE2eTest, EightWritersFiveFailovers_EveryAcknowledgedWriteIsThereExactlyOnce) {
  std::vector<std::string> flags = kFlags;
  flags.push_back("--job=worker=8");
  StartBoth(flags);
  int active = Active();
  ASSERT_GE(active, 0);
  std::vector<Subprocess*> clients;
  for (int task = 0; task < 8; ++task) {
    clients.push_back(StartProgram(MUSTER_RESTART_WORKER_BIN, task, "loss",
                                   {"--duration_ms=16000", "--reconnect_timeout_ms=30000"}));
  }
  for (Subprocess* client : clients) {
    ASSERT_TRUE(client->WaitForLine("EVENT connect code=OK", kBound).ok()) << client->output();
  }
  std::mt19937 random(20261129);
  for (int failover = 0; failover < 5; ++failover) {
    absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(100, 600)(random)));
    Kill(active);
    int next = Active();
    ASSERT_EQ(next, 1 - active) << "failover " << failover;
    StartHaLeader(active, flags);  // back, as a standby
    active = next;
  }
  ExpectAcknowledgedWritesExactlyOnce(MUSTER_RESTART_WORKER_BIN, clients);
}

TEST_F(HaFailoverE2eTest, StandbyAnswersNamingTheActiveLeader_AndAnotherConfigurationIsRefused) {
  std::vector<std::string> flags = kFlags;
  flags.push_back("--job=worker=2");
  StartBoth(flags);
  int active = Active();
  ASSERT_GE(active, 0);
  // A client given only the standby's address is told where the active leader is.
  const std::string standby = absl::StrCat("127.0.0.1:", ports_[1 - active]);
  auto status = Subprocess::Start({MUSTER_CLI_BIN, "status", "--leader=" + standby});
  ASSERT_TRUE(status.ok());
  ASSERT_TRUE((*status)->Wait(kBound).ok());
  EXPECT_THAT((*status)->output(),
              AllOf(HasSubstr("standby of HA job " + name_),
                    HasSubstr(absl::StrCat("the active leader is at 127.0.0.1:", ports_[active]))));
  // Given both, it reaches the active one.
  auto both = Subprocess::Start({MUSTER_CLI_BIN, "status", "--leader=" + address_});
  ASSERT_TRUE(both.ok());
  auto code = (*both)->Wait(kBound);
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 0) << (*both)->output();
  // A third leader of the same name with other jobs is refused.
  auto other = Subprocess::Start({MUSTER_CLI_BIN, "serve", "--ha-etcd=" + etcd_->endpoints(),
                                  "--ha-name=" + name_, "--port=0", "--job=worker=3"});
  ASSERT_TRUE(other.ok());
  auto refused = (*other)->Wait(kBound);
  ASSERT_TRUE(refused.ok());
  EXPECT_NE(*refused, 0);
  EXPECT_THAT((*other)->output(), HasSubstr("runs another configuration"));
}

TEST_F(HaFailoverE2eTest, EtcdUnreachableAtStart_IsRefusedNamingTheEndpoints) {
  auto leader = Subprocess::Start({MUSTER_CLI_BIN, "serve", "--ha-etcd=127.0.0.1:1", "--ha-name=x",
                                   "--port=0", "--job=worker=1"});
  ASSERT_TRUE(leader.ok());
  auto code = (*leader)->Wait(kBound);
  ASSERT_TRUE(code.ok());
  EXPECT_NE(*code, 0);
  EXPECT_THAT((*leader)->output(), HasSubstr("no etcd member answered at 127.0.0.1:1"));
}

}  // namespace
}  // namespace muster::testing
