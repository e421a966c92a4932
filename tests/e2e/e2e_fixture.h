// The fixture of the multi-process tests: a real leader process (tests/e2e/programs/e2e_leader)
// and real worker processes (e2e_worker scenarios) on 127.0.0.1, each bounded in time and killed
// with the test.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/time/time.h>
#include <gtest/gtest.h>

#include "tests/testing/subprocess.h"

namespace muster::testing {

constexpr absl::Duration kBound = absl::Seconds(30);

class E2eTest : public ::testing::Test {
 protected:
  // `prefix` runs the leader under another command (e.g. prlimit).
  void StartLeader(std::vector<std::string> flags, std::vector<std::string> prefix = {}) {
    flags.insert(flags.begin(), MUSTER_E2E_LEADER_BIN);
    flags.insert(flags.begin(), prefix.begin(), prefix.end());
    auto leader = Subprocess::Start(flags);
    ASSERT_TRUE(leader.ok()) << leader.status();
    leader_ = std::move(*leader);
    auto ready = leader_->WaitForLine("muster leader ready at 127.0.0.1:", kBound);
    ASSERT_TRUE(ready.ok()) << ready.status();
    std::string rest = ready->substr(ready->find("127.0.0.1:"));
    address_ = rest.substr(0, rest.find(' '));
    direct_port_ = static_cast<int>(Field(*ready, "direct"));
  }

  Subprocess* StartWorker(int task, const std::string& scenario,
                          std::vector<std::string> flags = {}) {
    return StartProgram(MUSTER_E2E_WORKER_BIN, task, scenario, std::move(flags));
  }

  // A worker program that takes --leader, --task and --scenario.
  Subprocess* StartProgram(const std::string& program, int task, const std::string& scenario,
                           std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {program, "--leader=" + address_, absl::StrCat("--task=", task),
                                     "--scenario=" + scenario};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto worker = Subprocess::Start(argv);
    EXPECT_TRUE(worker.ok()) << worker.status();
    workers_.push_back(std::move(*worker));
    return workers_.back().get();
  }

  static void ExpectExit(Subprocess* process, int code) {
    auto exit = process->Wait(kBound);
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_EQ(*exit, code) << process->output();
  }

  // restart_worker's scenarios after the leader came back: `getter` (scenario get) got
  // `value`, each of `waiting` (scenario barrier) passed the barrier, and every worker but
  // `put` exited 0 without an error callback, shut down.
  void ExpectGetAndBarrierCompleted(Subprocess* getter, const std::vector<Subprocess*>& waiting,
                                    const Subprocess* put, const std::string& value) {
    auto got = getter->WaitForLine("EVENT got", kBound);
    ASSERT_TRUE(got.ok()) << got.status() << getter->output();
    EXPECT_NE(got->find("value=" + value), std::string::npos) << *got;
    for (Subprocess* worker : waiting) {
      auto passed = worker->WaitForLine("EVENT barrier", kBound);
      ASSERT_TRUE(passed.ok()) << passed.status() << worker->output();
      EXPECT_NE(passed->find("code=OK"), std::string::npos) << *passed;
    }
    for (auto& owned : workers_) {
      Subprocess* worker = owned.get();
      if (worker == put) continue;
      ExpectExit(worker, 0);
      EXPECT_EQ(worker->output().find("EVENT error"), std::string::npos) << worker->output();
      EXPECT_NE(worker->output().find("EVENT shutdown code=OK"), std::string::npos)
          << worker->output();
    }
  }

  // restart_worker's loss writers `clients` (tasks 0..n-1) are done without a failed call, and a
  // check (scenario check, started with `program`) finds exactly what each had acknowledged.
  void ExpectAcknowledgedWritesExactlyOnce(const std::string& program,
                                           const std::vector<Subprocess*>& clients) {
    std::vector<std::pair<int64_t, int64_t>> acknowledged;  // (inserts, increments) per client
    for (size_t task = 0; task < clients.size(); ++task) {
      auto done = clients[task]->WaitForLine("EVENT done", kBound);
      ASSERT_TRUE(done.ok()) << done.status() << clients[task]->output();
      EXPECT_EQ(Field(*done, "failures"), 0) << clients[task]->output();
      acknowledged.emplace_back(Field(*done, "inserts"), Field(*done, "increments"));
      EXPECT_GT(acknowledged.back().first, 0);
      ExpectExit(clients[task], 0);
    }
    Subprocess* check = StartProgram(program, 9, "check",
                                     {absl::StrCat("--clients=", clients.size())});
    for (size_t task = 0; task < clients.size(); ++task) {
      auto line = check->WaitForLine(absl::StrCat("EVENT check client=", task, " "), kBound);
      ASSERT_TRUE(line.ok()) << line.status() << check->output();
      EXPECT_EQ(Field(*line, "keys"), acknowledged[task].first) << *line;
      EXPECT_EQ(Field(*line, "right"), acknowledged[task].first) << *line;
      EXPECT_EQ(Field(*line, "counter"), acknowledged[task].second) << *line;
    }
    ExpectExit(check, 0);
  }

  // The number after `name=` in `line` (-1 when absent).
  static int64_t Field(const std::string& line, const std::string& name) {
    size_t pos = line.find(name + "=");
    if (pos == std::string::npos) return -1;
    pos += name.size() + 1;
    int64_t value = -1;
    return absl::SimpleAtoi(line.substr(pos, line.find(' ', pos) - pos), &value) ? value : -1;
  }

  // The wall-clock microseconds of the worker's error event.
  static int64_t ErrorTime(const std::string& line) {
    int64_t at = 0;
    size_t pos = line.find("at_us=");
    if (pos == std::string::npos) return 0;
    std::string digits = line.substr(pos + 6, line.find(' ', pos) - pos - 6);
    return absl::SimpleAtoi(digits, &at) ? at : 0;
  }

  std::unique_ptr<Subprocess> leader_;
  std::string address_;
  int direct_port_ = -1;  // the leader's direct port (0: none)
  std::vector<std::unique_ptr<Subprocess>> workers_;
};

}  // namespace muster::testing
