// A leader restart is a pause: a real leader (e2e_leader --state_dir) killed with SIGKILL and
// started again on the same port and state dir, with real worker processes (restart_worker)
// whose agents reconnect. Blocked calls complete, acknowledged writes are all there exactly
// once, a worker that died meanwhile is reported after the reconnect window, an ephemeral key
// ends with the incarnation that wrote it before the restart, and a damaged state dir is refused
// or recovered up to the damage.
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>

#include <absl/strings/numbers.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/e2e/e2e_fixture.h"

namespace muster::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class LeaderRestartE2eTest : public E2eTest {
 protected:
  void SetUp() override {
    state_dir_ = fs::path(::testing::TempDir()) /
                 absl::StrCat("muster_state_", getpid(), "_",
                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(state_dir_);
  }
  void TearDown() override { fs::remove_all(state_dir_); }

  // Starts the leader on `port` (0: any) with the state dir and `flags`.
  void Start(int port, std::vector<std::string> flags) {
    flags.push_back("--state_dir=" + state_dir_.string());
    flags.push_back(absl::StrCat("--port=", port));
    StartLeader(std::move(flags));
    port_ = std::stoi(address_.substr(address_.find(':') + 1));
  }

  void KillLeader() {
    leader_->Signal(SIGKILL);
    (void)leader_->Wait(kBound);
  }

  Subprocess* StartRestartWorker(int task, const std::string& scenario,
                                 std::vector<std::string> flags = {}) {
    return StartProgram(MUSTER_RESTART_WORKER_BIN, task, scenario, std::move(flags));
  }

  // What a client that is no task reads under `key`: "value=<v>" or "code=<CODE> ...".
  std::string Read(const std::string& key) {
    Subprocess* reader = StartRestartWorker(9, "read", {"--key=" + key});
    auto line = reader->WaitForLine("EVENT read ", kBound);
    ExpectExit(reader, 0);
    if (!line.ok()) return line.status().ToString() + reader->output();
    return line->substr(line->find("EVENT read ") + 11);
  }

  // The newest LevelDB log file of the state dir.
  fs::path NewestLog() const {
    fs::path newest;
    for (const auto& entry : fs::directory_iterator(state_dir_)) {
      if (entry.path().extension() == ".log" &&
          (newest.empty() || entry.path().filename() > newest.filename())) {
        newest = entry.path();
      }
    }
    return newest;
  }

  fs::path state_dir_;
  int port_ = 0;
};

TEST_F(LeaderRestartE2eTest, KilledLeaderRestarted_BlockedGetAndBarrierComplete_NoErrorCallback) {
  const std::vector<std::string> leader_flags = {"--jobs=worker=4", "--heartbeat_timeout_ms=2000",
                                                 "--reconnect_window_ms=10000"};
  Start(0, leader_flags);
  Subprocess* getter = StartRestartWorker(0, "get");
  std::vector<Subprocess*> waiting;
  for (int task : {1, 2, 3}) waiting.push_back(StartRestartWorker(task, "barrier"));
  ASSERT_TRUE(getter->WaitForLine("EVENT waiting get", kBound).ok()) << getter->output();
  for (Subprocess* worker : waiting) {
    ASSERT_TRUE(worker->WaitForLine("EVENT waiting barrier", kBound).ok()) << worker->output();
  }
  absl::SleepFor(absl::Milliseconds(200));  // the calls reach the leader
  KillLeader();
  absl::SleepFor(absl::Milliseconds(500));  // the workers notice and retry
  Start(port_, leader_flags);
  EXPECT_THAT(leader_->output(), HasSubstr("recovered 4 tasks (4 connected"));
  Subprocess* put = StartRestartWorker(9, "put", {"--value=after-restart"});
  ExpectExit(put, 0);
  ExpectGetAndBarrierCompleted(getter, waiting, put, "after-restart");
}

TEST_F(LeaderRestartE2eTest, EightWritersFiveRestarts_EveryAcknowledgedWriteIsThereExactlyOnce) {
  const std::vector<std::string> leader_flags = {"--jobs=worker=8", "--heartbeat_timeout_ms=2000",
                                                 "--reconnect_window_ms=10000"};
  Start(0, leader_flags);
  std::vector<Subprocess*> clients;
  for (int task = 0; task < 8; ++task) {
    clients.push_back(StartRestartWorker(task, "loss", {"--duration_ms=7000"}));
  }
  for (Subprocess* client : clients) {
    ASSERT_TRUE(client->WaitForLine("EVENT connect code=OK", kBound).ok()) << client->output();
  }
  std::mt19937 random(20261125);
  for (int restart = 0; restart < 5; ++restart) {
    absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(150, 700)(random)));
    KillLeader();
    Start(port_, leader_flags);
  }
  ExpectAcknowledgedWritesExactlyOnce(MUSTER_RESTART_WORKER_BIN, clients);
}

TEST_F(LeaderRestartE2eTest, WorkerKilledWhileLeaderDown_ReportedAfterTheReconnectWindow) {
  const std::vector<std::string> leader_flags = {"--jobs=worker=2", "--heartbeat_timeout_ms=2000",
                                                 "--reconnect_window_ms=1500"};
  Start(0, leader_flags);
  Subprocess* survivor = StartRestartWorker(0, "idle");
  Subprocess* victim = StartRestartWorker(1, "idle");
  ASSERT_TRUE(survivor->WaitForLine("EVENT connect code=OK", kBound).ok()) << survivor->output();
  ASSERT_TRUE(victim->WaitForLine("EVENT connect code=OK", kBound).ok()) << victim->output();
  KillLeader();
  victim->Signal(SIGKILL);
  (void)victim->Wait(kBound);
  // Taken before the start: the window begins as the restarted leader recovers its tasks.
  const int64_t restarted_us = absl::ToUnixMicros(absl::Now());
  Start(port_, leader_flags);
  auto error = survivor->WaitForLine("EVENT error", kBound);
  ASSERT_TRUE(error.ok()) << error.status() << survivor->output();
  EXPECT_THAT(*error, HasSubstr("code=UNAVAILABLE"));
  EXPECT_THAT(*error, HasSubstr("/job:worker/task:1"));
  EXPECT_THAT(*error, HasSubstr("reconnect window"));
  int64_t after_us = ErrorTime(*error) - restarted_us;
  EXPECT_GE(after_us, 1'500'000) << *error;  // not before the window ends
  EXPECT_LT(after_us, 5'000'000) << *error;
  ExpectExit(survivor, 0);
}

// The writer of an ephemeral key dies while the leader is down: the restarted leader deletes the
// key when the writer fails at the end of the reconnect window.
TEST_F(LeaderRestartE2eTest, EphemeralWriterKilledWhileLeaderDown_KeyGoneAfterTheWindow) {
  const std::vector<std::string> leader_flags = {"--jobs=worker=2", "--heartbeat_timeout_ms=2000",
                                                 "--reconnect_window_ms=1500"};
  Start(0, leader_flags);
  Subprocess* survivor = StartRestartWorker(1, "idle");
  Subprocess* writer = StartRestartWorker(0, "ephemeral");
  ASSERT_TRUE(survivor->WaitForLine("EVENT connect code=OK", kBound).ok()) << survivor->output();
  auto inserted = writer->WaitForLine("EVENT inserted", kBound);
  ASSERT_TRUE(inserted.ok()) << inserted.status() << writer->output();
  ASSERT_THAT(*inserted, HasSubstr("code=OK"));
  KillLeader();
  writer->Signal(SIGKILL);
  (void)writer->Wait(kBound);
  Start(port_, leader_flags);
  auto error = survivor->WaitForLine("EVENT error", kBound);  // the window is over
  ASSERT_TRUE(error.ok()) << error.status() << survivor->output();
  EXPECT_THAT(*error, HasSubstr("/job:worker/task:0"));
  EXPECT_THAT(*error, HasSubstr("reconnect window"));
  EXPECT_THAT(Read("eph/0"), HasSubstr("code=NOT_FOUND"));
  ExpectExit(survivor, 0);
}

// The writer of an ephemeral key reconnects to the restarted leader, keeps its key, and dies:
// the key is deleted as it is without a restart.
TEST_F(LeaderRestartE2eTest, EphemeralWriterReconnectsThenKilled_KeyGone) {
  const std::vector<std::string> leader_flags = {"--jobs=worker=2", "--heartbeat_timeout_ms=2000",
                                                 "--reconnect_window_ms=10000"};
  Start(0, leader_flags);
  Subprocess* survivor = StartRestartWorker(1, "idle");
  Subprocess* writer = StartRestartWorker(0, "ephemeral");
  ASSERT_TRUE(survivor->WaitForLine("EVENT connect code=OK", kBound).ok()) << survivor->output();
  auto inserted = writer->WaitForLine("EVENT inserted", kBound);
  ASSERT_TRUE(inserted.ok()) << inserted.status() << writer->output();
  ASSERT_THAT(*inserted, HasSubstr("code=OK"));
  const std::string incarnation = inserted->substr(inserted->find("incarnation=") + 12);
  absl::SleepFor(absl::Milliseconds(200));  // the writer's get reaches the leader
  KillLeader();
  absl::SleepFor(absl::Milliseconds(500));  // the workers notice and retry
  Start(port_, leader_flags);
  // The writer's get is re-sent only once it has registered again: "go" means it is back.
  ExpectExit(StartRestartWorker(9, "put", {"--key=go/0", "--value=1"}), 0);
  auto go = writer->WaitForLine("EVENT go", kBound);
  ASSERT_TRUE(go.ok()) << go.status() << writer->output();
  EXPECT_EQ(Read("eph/0"), "value=" + incarnation);
  writer->Signal(SIGKILL);
  (void)writer->Wait(kBound);
  auto error = survivor->WaitForLine("EVENT error", kBound);  // the writer's failure
  ASSERT_TRUE(error.ok()) << error.status() << survivor->output();
  EXPECT_THAT(*error, HasSubstr("/job:worker/task:0"));
  EXPECT_THAT(Read("eph/0"), HasSubstr("code=NOT_FOUND"));
  ExpectExit(survivor, 0);
  EXPECT_THAT(survivor->output(), ::testing::Not(HasSubstr("reconnect window")));
}

TEST_F(LeaderRestartE2eTest, TornLastWrite_RecoversEverythingBefore) {
  const std::vector<std::string> leader_flags = {"--jobs=worker=1"};
  Start(0, leader_flags);
  ExpectExit(StartRestartWorker(9, "put", {"--value=first"}), 0);
  KillLeader();
  fs::path log = NewestLog();
  ASSERT_FALSE(log.empty());
  auto size = fs::file_size(log);
  ASSERT_GT(size, 4u);
  fs::resize_file(log, size - 3);  // the last record loses its tail
  Start(port_, leader_flags);
  EXPECT_THAT(leader_->output(), HasSubstr("state dir"));
  // The torn record was the last write; the leader serves what came before, and new writes.
  // boot/key's record was the one torn, so inserting it again succeeds.
  Subprocess* put = StartRestartWorker(9, "put", {"--value=second"});
  auto line = put->WaitForLine("EVENT put", kBound);
  ASSERT_TRUE(line.ok()) << line.status() << put->output();
  EXPECT_THAT(*line, HasSubstr("code=OK"));
}

TEST_F(LeaderRestartE2eTest, GarbageInTheStateDir_LeaderRefusesToStart) {
  const std::vector<std::string> leader_flags = {"--jobs=worker=1"};
  Start(0, leader_flags);
  ExpectExit(StartRestartWorker(9, "put", {"--value=kept"}), 0);
  KillLeader();
  {
    std::ofstream current(state_dir_ / "CURRENT", std::ios::binary | std::ios::trunc);
    std::mt19937 random(7);
    for (int i = 0; i < 63; ++i) current.put(static_cast<char>(random()));
    current.put('x');  // not a manifest name followed by a newline
  }
  std::vector<std::string> argv = {MUSTER_E2E_LEADER_BIN, "--jobs=worker=1",
                                   "--state_dir=" + state_dir_.string(),
                                   absl::StrCat("--port=", port_)};
  auto leader = Subprocess::Start(argv);
  ASSERT_TRUE(leader.ok()) << leader.status();
  auto exit = (*leader)->Wait(kBound);
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(*exit, 1) << (*leader)->output();
  EXPECT_THAT((*leader)->output(), HasSubstr("DATA_LOSS"));
  EXPECT_THAT((*leader)->output(), HasSubstr("is damaged"));
}

TEST_F(LeaderRestartE2eTest, SecondLeaderOnTheSameStateDir_Refused) {
  Start(0, {"--jobs=worker=1"});
  std::vector<std::string> argv = {MUSTER_E2E_LEADER_BIN, "--jobs=worker=1",
                                   "--state_dir=" + state_dir_.string(), "--port=0"};
  auto second = Subprocess::Start(argv);
  ASSERT_TRUE(second.ok()) << second.status();
  auto exit = (*second)->Wait(kBound);
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(*exit, 1) << (*second)->output();
  EXPECT_THAT((*second)->output(), HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT((*second)->output(), HasSubstr("in use by another leader"));
}

}  // namespace
}  // namespace muster::testing
