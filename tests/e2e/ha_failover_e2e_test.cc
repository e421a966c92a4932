// Standby leaders on etcd, for real: a 3-member etcd cluster, two `muster serve --ha-etcd`
// processes of one HA job, and worker processes (restart_worker) given both leaders' addresses.
// The active leader is killed with SIGKILL: the standby takes over once its lease ends, the
// workers' blocked calls complete against it, every acknowledged write is there exactly once,
// and no error callback fires. etcd losing one member of three goes unnoticed; losing two
// pauses the writes, which resume once a quorum is back. `muster run` given both leaders follows
// a failover with its tasks running.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <random>

#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/e2e/e2e_fixture.h"
#include "tests/e2e/programs/worker_events.h"
#include "tests/net/ha/etcd_cluster.h"
#include "tests/net/ha/ha_leader_pair.h"
#include "tests/net/ha/write_history.h"

namespace muster::testing {
namespace {

using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

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
    leaders_.process[i] = *std::move(leader);
    auto ready = leaders_.process[i]->WaitForLine("muster leader ready at 127.0.0.1:", kBound);
    ASSERT_TRUE(ready.ok()) << ready.status() << leaders_.process[i]->output();
    std::string rest = ready->substr(ready->find("127.0.0.1:") + 10);
    ports_[i] = std::stoi(rest.substr(0, rest.find(' ')));
  }

  void StartBoth(const std::vector<std::string>& flags) {
    StartHaLeader(0, flags);
    StartHaLeader(1, flags);
    address_ = absl::StrCat("127.0.0.1:", ports_[0], ",127.0.0.1:", ports_[1]);
  }

  int Active() { return leaders_.Active(kBound); }

  void Kill(int i) { leaders_.Kill(i, kBound); }

  // `n` writers (restart_worker loss, with `flags`) that follow a failover, each connected;
  // none when one did not connect.
  std::vector<Subprocess*> StartWriters(int n, std::vector<std::string> flags) {
    flags.push_back("--reconnect_timeout_ms=30000");
    std::vector<Subprocess*> writers;
    for (int task = 0; task < n; ++task) {
      writers.push_back(StartProgram(MUSTER_RESTART_WORKER_BIN, task, "loss", flags));
    }
    for (Subprocess* writer : writers) {
      auto connected = writer->WaitForLine("EVENT connect code=OK", kBound);
      EXPECT_TRUE(connected.ok()) << connected.status() << writer->output();
      if (!connected.ok()) return {};
    }
    return writers;
  }

  // `through_etcd`: muster run is given the job's etcd:// URL instead of the leaders' list.
  void StartJobAndRun(int* active, std::vector<int>* pids, std::unique_ptr<Subprocess>* run,
                      bool through_etcd = false);

  std::unique_ptr<EtcdCluster> etcd_;
  std::string name_;
  int ports_[2] = {0, 0};
  HaLeaderPair leaders_;
};

const std::vector<std::string> kFlags = {"--heartbeat-timeout=2s", "--reconnect-window=10s",
                                         "--ha-lease-ttl=2s"};

TEST_F(HaFailoverE2eTest, ActiveKilled_StandbyTakesOver_BlockedGetAndBarrierComplete) {
  std::vector<std::string> flags = kFlags;
  flags.push_back("--job=worker=4");
  StartBoth(flags);
  int active = Active();
  ASSERT_GE(active, 0);
  EXPECT_NE(leaders_.Saw(1 - active, "standby: the active leader is", kBound), "")
      << leaders_.Outputs();
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
  EXPECT_THAT(leaders_.process[next]->output(), HasSubstr("recovered 4 tasks (4 connected"));
  EXPECT_LT(failover, absl::Seconds(6)) << "lease TTL 2s";
  // Given only etcd and the HA name (the later --leader wins), a new agent finds the new leader.
  Subprocess* put = StartProgram(
      MUSTER_RESTART_WORKER_BIN, 9, "put",
      {"--value=after-failover", "--leader=etcd://" + etcd_->endpoints() + "/" + name_});
  ExpectExit(put, 0);
  ExpectGetAndBarrierCompleted(getter, waiting, put, "after-failover");
}

TEST_F(HaFailoverE2eTest, EightWritersFiveFailovers_EveryAcknowledgedWriteIsThereExactlyOnce) {
  std::vector<std::string> flags = kFlags;
  flags.push_back("--job=worker=8");
  StartBoth(flags);
  int active = Active();
  ASSERT_GE(active, 0);
  std::vector<Subprocess*> clients = StartWriters(8, {"--duration_ms=16000"});
  ASSERT_EQ(clients.size(), 8u);
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

TEST_F(HaFailoverE2eTest, EtcdMembersLost_OneUnnoticed_TwoPauseWritesThatThenResume) {
  std::vector<std::string> flags = kFlags;
  flags.push_back("--job=worker=4");
  StartBoth(flags);
  const int active = Active();
  ASSERT_GE(active, 0);
  std::vector<Subprocess*> clients = StartWriters(4, {"--history", "--duration_ms=16000"});
  ASSERT_EQ(clients.size(), 4u);
  absl::SleepFor(absl::Seconds(1));
  // One member of three lost (not etcd's raft leader, whose loss costs an etcd election of up
  // to a second): the job does not notice (no step-down, no takeover).
  const int follower = etcd_->Follower();
  ASSERT_GE(follower, 0);
  const int64_t one_lost = NowMicros();
  etcd_->Kill(follower);
  absl::SleepFor(absl::Seconds(3));  // longer than the lease TTL
  const std::string outputs = leaders_.Outputs();
  EXPECT_EQ(HaLeaderPair::Count(outputs, "active: serving"), 1) << outputs;
  EXPECT_EQ(HaLeaderPair::Count(outputs, "stepped down"), 0) << outputs;
  // Two of three: no quorum, so nothing can be acknowledged; the writes wait, then resume once a
  // quorum is back (the active leader stepped down meanwhile; a leader takes over again).
  const int64_t quorum_lost = NowMicros();
  const int second = (follower + 1) % 3;
  etcd_->Kill(second);
  absl::SleepFor(absl::Seconds(3));
  const int64_t quorum_back = NowMicros();
  ASSERT_TRUE(etcd_->Restart(second).ok());
  EXPECT_GE(Active(), 0);
  ExpectAcknowledgedWritesExactlyOnce(MUSTER_RESTART_WORKER_BIN, clients);
  WriteHistory history;
  for (int task = 0; task < 4; ++task) history.Add(task, clients[task]->output());
  EXPECT_FALSE(history.Between(one_lost, quorum_lost).empty());
  // A write etcd committed just before the kill may reach its writer a little later (1 s of
  // slack on a loaded machine); none is acknowledged in the 2 s after.
  EXPECT_THAT(history.Between(quorum_lost + 1'000'000, quorum_back), IsEmpty())
      << WriteHistory::Describe(history.Between(quorum_lost + 1'000'000, quorum_back));
  EXPECT_FALSE(history.Between(quorum_back, NowMicros()).empty());
}

// The state moved under the active leader (another writer moved etcd's write counter, as a
// second leader would): its next write fails, it steps down, and the calls that waited on that
// write are answered by the other leader (re-sent by their agents), none failed.
TEST_F(HaFailoverE2eTest, StateMovedUnderTheActiveLeader_ItStepsDownAndTheOtherAnswersItsCalls) {
  std::vector<std::string> flags = kFlags;
  flags.push_back("--job=worker=4");
  StartBoth(flags);
  const int active = Active();
  ASSERT_GE(active, 0);
  std::vector<Subprocess*> clients = StartWriters(4, {"--duration_ms=8000"});
  ASSERT_EQ(clients.size(), 4u);
  absl::SleepFor(absl::Seconds(1));
  auto put = Subprocess::Start({"/usr/bin/etcdctl", "--endpoints=" + etcd_->endpoints(), "put",
                                "muster/" + name_ + "/writes", "999999 intruder"});
  ASSERT_TRUE(put.ok()) << put.status();
  ASSERT_EQ((*put)->Wait(kBound).value_or(-1), 0) << (*put)->output();
  const std::string stepped = leaders_.Saw(active, "standby: stepped down", kBound);
  EXPECT_THAT(stepped, AllOf(HasSubstr("could not write the job's state"),
                             HasSubstr("another writer changed the state")))
      << leaders_.Outputs();
  EXPECT_EQ(Active(), 1 - active) << leaders_.Outputs();
  ExpectAcknowledgedWritesExactlyOnce(MUSTER_RESTART_WORKER_BIN, clients);
}

TEST_F(HaFailoverE2eTest, StandbyAnswersNamingTheActiveLeader_AndAnotherConfigurationIsRefused) {
  std::vector<std::string> flags = kFlags;
  flags.push_back("--job=worker=2");
  StartBoth(flags);
  int active = Active();
  ASSERT_GE(active, 0);
  // Once the standby has campaigned (before, it knows of no active leader), a client given only
  // its address is told where the active leader is.
  ASSERT_NE(leaders_.Saw(1 - active, "standby: the active leader is", kBound), "")
      << leaders_.Outputs();
  const std::string standby = absl::StrCat("127.0.0.1:", ports_[1 - active]);
  auto status = Subprocess::Start({MUSTER_CLI_BIN, "status", "--leader=" + standby});
  ASSERT_TRUE(status.ok());
  ASSERT_TRUE((*status)->Wait(kBound).ok());
  EXPECT_THAT((*status)->output(),
              AllOf(HasSubstr("standby of HA job " + name_),
                    HasSubstr(absl::StrCat("the active leader is at 127.0.0.1:", ports_[active]))));
  // Given both (and an address where nothing listens), it shows the active one's status, and
  // what each leader is.
  auto both =
      Subprocess::Start({MUSTER_CLI_BIN, "status", "--leader=" + address_ + ",127.0.0.1:1"});
  ASSERT_TRUE(both.ok());
  auto code = (*both)->Wait(kBound);
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 0) << (*both)->output();
  const std::string active_address = absl::StrCat("127.0.0.1:", ports_[active]);
  EXPECT_THAT(
      (*both)->output(),
      AllOf(HasSubstr("leader " + active_address + " (job-state version"), HasSubstr("LEADERS (3)"),
            ContainsRegex(active_address + " +active\n"),
            ContainsRegex(absl::StrCat("127.0.0.1:", ports_[1 - active], " +standby +names ",
                                       active_address, " as the active leader")),
            ContainsRegex("127.0.0.1:1 +unreachable +.*nothing listening")))
      << (*both)->output();
  // Given only etcd and the HA name, it finds both leaders there, the active one first.
  auto from_etcd = Subprocess::Start(
      {MUSTER_CLI_BIN, "status", "--leader=etcd://" + etcd_->endpoints() + "/" + name_});
  ASSERT_TRUE(from_etcd.ok());
  ASSERT_EQ((*from_etcd)->Wait(kBound).value_or(-1), 0) << (*from_etcd)->output();
  EXPECT_THAT((*from_etcd)->output(),
              AllOf(HasSubstr("leader " + active_address + " (job-state version"),
                    ContainsRegex("LEADERS \\(2\\)\nLEADER +ROLE\n" + active_address +
                                  " +active\n127.0.0.1:[0-9]+ +standby")))
      << (*from_etcd)->output();
  auto unknown = Subprocess::Start(
      {MUSTER_CLI_BIN, "status", "--leader=etcd://" + etcd_->endpoints() + "/no-such-job"});
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ((*unknown)->Wait(kBound).value_or(-1), 1) << (*unknown)->output();
  EXPECT_THAT((*unknown)->output(), HasSubstr("no leader of HA job no-such-job is registered"));
  // A third leader of the same name with other jobs is refused.
  auto other = Subprocess::Start({MUSTER_CLI_BIN, "serve", "--ha-etcd=" + etcd_->endpoints(),
                                  "--ha-name=" + name_, "--port=0", "--job=worker=3"});
  ASSERT_TRUE(other.ok());
  auto refused = (*other)->Wait(kBound);
  ASSERT_TRUE(refused.ok());
  EXPECT_NE(*refused, 0);
  EXPECT_THAT((*other)->output(), HasSubstr("runs another configuration"));
}

// `muster run --leader A,B` or `--leader etcd://...` (an HA job's launcher, run_worker tasks
// that follow the leaders)
// until every task printed its READY line; the pid of each task's process.
std::unique_ptr<Subprocess> StartRunOf(const std::string& leaders, int tasks,
                                       std::vector<int>* pids);

// Both leaders of job worker=2 and `muster run` of its two tasks through them, the tasks ready:
// the active leader's index, the tasks' pids, the launcher.
void HaFailoverE2eTest::StartJobAndRun(int* active, std::vector<int>* pids,
                                       std::unique_ptr<Subprocess>* run, bool through_etcd) {
  std::vector<std::string> flags = kFlags;
  flags.push_back("--job=worker=2");
  StartBoth(flags);
  *active = Active();
  ASSERT_GE(*active, 0);
  *run =
      StartRunOf(through_etcd ? "etcd://" + etcd_->endpoints() + "/" + name_ : address_, 2, pids);
  ASSERT_NE(*run, nullptr);
}

std::unique_ptr<Subprocess> StartRunOf(const std::string& leaders, int tasks,
                                       std::vector<int>* pids) {
  auto run = Subprocess::Start({MUSTER_CLI_BIN, "run", "--leader=" + leaders,
                                absl::StrCat("--tasks=0-", tasks - 1), "--stop-timeout=3s", "--",
                                MUSTER_RUN_WORKER_BIN, "--leader_reconnect_timeout=30s"});
  EXPECT_TRUE(run.ok()) << run.status();
  if (!run.ok()) return nullptr;
  for (int task = 0; task < tasks; ++task) {
    const std::string needle = absl::StrCat("READY task=", task, " generation=0 ");
    EXPECT_TRUE((*run)->WaitForOutput(needle, kBound)) << (*run)->output();
    const std::string& out = (*run)->output();
    const size_t at = out.find(" pid=", out.find(needle));
    pids->push_back(at == std::string::npos ? 0 : std::atoi(out.c_str() + at + 5));
  }
  return *std::move(run);
}

// The launcher of an HA job follows a failover: its tasks run on (the same processes, no
// error), it registers with the next leader again, and the job completes there.
TEST_F(HaFailoverE2eTest, MusterRunFollowsAFailover_TheSameProcessesFinishTheJob) {
  int active = -1;
  std::vector<int> pids;
  std::unique_ptr<Subprocess> run;
  ASSERT_NO_FATAL_FAILURE(StartJobAndRun(&active, &pids, &run));
  Kill(active);
  ASSERT_EQ(Active(), 1 - active) << leaders_.Outputs();
  EXPECT_TRUE(run->WaitForOutput("muster run: rejoined the job at its active leader", kBound))
      << run->output();
  // The tasks wait for "go" (run_worker): given by hand, the job completes at the new leader.
  auto put = Subprocess::Start({MUSTER_CLI_BIN, "kv", "put", "--leader=" + address_, "go", "1"});
  ASSERT_TRUE(put.ok());
  EXPECT_EQ((*put)->Wait(kBound).value_or(-1), 0) << (*put)->output();
  auto code = run->Wait(kBound);
  ASSERT_TRUE(code.ok()) << run->output();
  EXPECT_EQ(*code, 0) << run->output();
  const std::string out = run->output();
  EXPECT_THAT(out,
              AllOf(HasSubstr("lost the leader; looking for the job's active leader"),
                    HasSubstr("DONE task=0 generation=0"), HasSubstr("DONE task=1 generation=0"),
                    HasSubstr("muster run: every task finished")));
  EXPECT_EQ(out.find("ERROR CALLBACK"), std::string::npos) << out;
  EXPECT_EQ(out.find("stopping every task"), std::string::npos) << out;
  EXPECT_EQ(HaLeaderPair::Count(out, "READY task="), 2) << out;  // no process started again
}

// A task process that dies while the job has no leader is reported to the next one once the
// launcher rejoined it: its policy (fate-sharing) fails the job, naming that process's end.
// muster run is given the job's etcd:// URL, and so are its tasks (their agents read it).
TEST_F(HaFailoverE2eTest, MusterRunFollowsAFailover_AnExitWhileLeaderlessIsReportedToTheNext) {
  int active = -1;
  std::vector<int> pids;
  std::unique_ptr<Subprocess> run;
  ASSERT_NO_FATAL_FAILURE(StartJobAndRun(&active, &pids, &run, /*through_etcd=*/true));
  EXPECT_EQ(HaLeaderPair::Count(run->output(), " leader=etcd://" + etcd_->endpoints() + "/"), 2)
      << run->output();
  ASSERT_GT(pids[1], 0);
  Kill(active);
  kill(pids[1], SIGKILL);
  ASSERT_EQ(Active(), 1 - active) << leaders_.Outputs();
  auto code = run->Wait(kBound);
  ASSERT_TRUE(code.ok()) << run->output();
  EXPECT_EQ(*code, 1) << run->output();
  EXPECT_THAT(run->output(),
              AllOf(HasSubstr("muster run: rejoined the job at its active leader"),
                    HasSubstr("/job:worker/task:1 failed: UNAVAILABLE: The process of "
                              "/job:worker/task:1 was killed by signal 9 (SIGKILL) (reported by "
                              "its launcher)"),
                    HasSubstr("muster run: the job failed")))
      << run->output();
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

// The same over an etcd that requires TLS (a client certificate) and a user, as production
// clusters do: every process is told how in its environment (MUSTER_ETCD_*).
class HaFailoverSecureEtcdE2eTest : public HaFailoverE2eTest {
 protected:
  void SetUp() override {
    auto cluster = EtcdCluster::StartSecure(3, /*user=*/true);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    etcd_ = *std::move(cluster);
    name_ = absl::StrCat("job-", getpid(), "-secure");
    const EtcdSecurity& security = etcd_->security();
    setenv("MUSTER_ETCD_CACERT", security.ca_file.c_str(), 1);
    setenv("MUSTER_ETCD_CERT", security.cert_file.c_str(), 1);
    setenv("MUSTER_ETCD_KEY", security.key_file.c_str(), 1);
    setenv("MUSTER_ETCD_USER", security.user.c_str(), 1);
    setenv("MUSTER_ETCD_PASSWORD", security.password.c_str(), 1);
  }
  void TearDown() override {
    for (const char* name : {"MUSTER_ETCD_CACERT", "MUSTER_ETCD_CERT", "MUSTER_ETCD_KEY",
                             "MUSTER_ETCD_USER", "MUSTER_ETCD_PASSWORD"}) {
      unsetenv(name);
    }
  }
  // etcd:// takes HOST:PORT; TLS comes from the environment.
  std::string EtcdUrl() const {
    return absl::StrCat("etcd://", etcd_->endpoint(0), ",", etcd_->endpoint(1), ",",
                        etcd_->endpoint(2), "/", name_);
  }
};

TEST_F(HaFailoverSecureEtcdE2eTest, OverTlsWithAUser_ActiveKilled_StandbyTakesOver_AgentsFindIt) {
  std::vector<std::string> flags = kFlags;
  flags.push_back("--job=worker=2");
  StartBoth(flags);  // --ha-etcd=https://...
  int active = Active();
  ASSERT_GE(active, 0);
  Subprocess* before = StartProgram(MUSTER_RESTART_WORKER_BIN, 0, "put",
                                    {"--value=before", "--leader=" + EtcdUrl()});
  ExpectExit(before, 0);
  Kill(active);
  ASSERT_EQ(Active(), 1 - active) << leaders_.Outputs();
  // The key written before the kill, read back from etcd by the new leader.
  EXPECT_THAT(leaders_.process[1 - active]->output(), HasSubstr("1 keys in 1 directories"));
  // An agent given etcd:// finds the new leader, which has the key (put writes boot/key).
  Subprocess* after =
      StartProgram(MUSTER_RESTART_WORKER_BIN, 1, "put", {"--value=after", "--leader=" + EtcdUrl()});
  ExpectExit(after, 1);
  EXPECT_THAT(after->output(), HasSubstr("EVENT put code=ALREADY_EXISTS message=key boot/key"));
}

TEST_F(HaFailoverSecureEtcdE2eTest,
       AWrongPassword_TheLeaderRefusesToStartNamingTheUserNotThePassword) {
  setenv("MUSTER_ETCD_PASSWORD", "wrong-secret-31337", 1);
  auto leader = Subprocess::Start({MUSTER_CLI_BIN, "serve", "--ha-etcd=" + etcd_->endpoints(),
                                   "--ha-name=" + name_, "--port=0", "--job=worker=1"});
  ASSERT_TRUE(leader.ok());
  EXPECT_EQ((*leader)->Wait(kBound).value_or(-1), 1) << (*leader)->output();
  EXPECT_THAT((*leader)->output(),
              AllOf(HasSubstr("etcd refused user \"root\""), Not(HasSubstr("wrong-secret-31337"))));
  // An agent given etcd:// with it cannot read the leaders, and says why.
  Subprocess* put =
      StartProgram(MUSTER_RESTART_WORKER_BIN, 0, "put", {"--value=x", "--leader=" + EtcdUrl()});
  ExpectExit(put, 1);
  EXPECT_THAT(put->output(),
              AllOf(HasSubstr("etcd refused user \"root\""), Not(HasSubstr("wrong-secret-31337"))));
}

}  // namespace
}  // namespace muster::testing
