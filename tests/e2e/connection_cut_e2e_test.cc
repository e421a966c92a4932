// A worker's connection cut while the leader lives on: real writer processes (restart_worker)
// reach a memory-only leader (e2e_leader without direct calls: every write crosses the cut)
// through the test bed's relay (tests/netbed/relay.py), which is killed and started again on its
// port at random moments. Each agent reconnects to the same leader within its connection-loss
// grace and sends its unanswered writes again; the leader answers those it applied from the
// replies it kept, which the writes' request ids let it trim to the ones still in flight. Every
// acknowledged write is there exactly once, whether the agents number their writes in their
// actor (direct calls off) or as direct calls that fell back to it (on, but not offered).
#include <csignal>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>
#include <gtest/gtest.h>

#include "tests/e2e/e2e_fixture.h"

namespace muster::testing {
namespace {

class ConnectionCutE2eTest : public E2eTest, public ::testing::WithParamInterface<bool> {
 protected:
  // Starts the relay to the leader on `port` (0: any free one); returns its port.
  int StartRelay(int port) {
    auto relay = Subprocess::Start({"/usr/bin/python3", MUSTER_NETBED_RELAY, "--listen",
                                    absl::StrCat("127.0.0.1:", port), "--to", address_});
    EXPECT_TRUE(relay.ok()) << relay.status();
    if (!relay.ok()) return 0;
    relay_ = *std::move(relay);
    auto ready = relay_->WaitForLine("relay ready", kBound);
    EXPECT_TRUE(ready.ok()) << ready.status() << relay_->output();
    if (!ready.ok()) return 0;
    return std::stoi(ready->substr(ready->rfind(' ') + 1));
  }

  void CutAll() {
    relay_->Signal(SIGKILL);
    (void)relay_->Wait(kBound);
  }

  std::unique_ptr<Subprocess> relay_;
};

TEST_P(ConnectionCutE2eTest, EightWritersCutFiveTimes_EveryAcknowledgedWriteIsThereExactlyOnce) {
  StartLeader({"--jobs=worker=8", "--heartbeat_timeout_ms=10000", "--direct_calls=false",
               "--connection_loss_grace_ms=10000"});
  const int port = StartRelay(0);
  ASSERT_NE(port, 0);
  std::vector<Subprocess*> clients;
  for (int task = 0; task < 8; ++task) {
    clients.push_back(StartProgram(MUSTER_RESTART_WORKER_BIN, task, "loss",
                                   {"--duration_ms=7000", absl::StrCat("--leader=127.0.0.1:", port),
                                    GetParam() ? "--direct_calls=true" : "--direct_calls=false"}));
  }
  for (Subprocess* client : clients) {
    ASSERT_TRUE(client->WaitForLine("EVENT connect code=OK", kBound).ok()) << client->output();
  }
  std::mt19937 random(20261201);
  for (int cut = 0; cut < 5; ++cut) {
    absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(150, 700)(random)));
    CutAll();
    ASSERT_EQ(StartRelay(port), port);
  }
  ExpectAcknowledgedWritesExactlyOnce(MUSTER_RESTART_WORKER_BIN, clients);
}

INSTANTIATE_TEST_SUITE_P(Numbering, ConnectionCutE2eTest, ::testing::Values(false, true),
                         [](const auto& info) {
                           return std::string(info.param ? "DirectFallback" : "AgentActor");
                         });

}  // namespace
}  // namespace muster::testing
