// A worker behind a slow link on loopback (no root needed): its connection to the leader goes
// through the test bed's relay (tests/netbed/relay.py) paced to 1 MB/s each way, and a 4 MiB
// value takes about 4 s to reach it, twice its heartbeat timeout. With heartbeat requests, the
// answers wait behind the value: the agent must count the leader's arriving bytes as signs of
// life. With one-way beats, CAF's 2 s connection timeout watches the leader and counts whole
// frames: the node's network layer must keep it fed while the frame arrives. Either way the job
// completes, the value intact.
#include <memory>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/e2e/e2e_fixture.h"

namespace muster::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class SlowLinkE2eTest : public E2eTest, public ::testing::WithParamInterface<bool> {};

TEST_P(SlowLinkE2eTest, FourMiBOverOneMBPerSecond_TheFarWorkerStaysAndGetsItIntact) {
  const bool one_way = GetParam();
  StartLeader({"--jobs=worker=2", "--heartbeat_timeout_ms=2000"});
  auto relay = Subprocess::Start({"/usr/bin/python3", MUSTER_NETBED_RELAY, "--listen",
                                  "127.0.0.1:0", "--to", address_, "--rate-bytes=1000000"});
  ASSERT_TRUE(relay.ok()) << relay.status();
  auto ready = (*relay)->WaitForLine("relay ready", kBound);
  ASSERT_TRUE(ready.ok()) << ready.status();
  const std::string far_leader = "127.0.0.1:" + ready->substr(ready->rfind(' ') + 1);
  const std::string bytes = absl::StrCat("--bootstrap_bytes=", 4 << 20);
  Subprocess* near = StartWorker(0, "full", {"--tasks=2", bytes});
  std::vector<std::string> far_flags = {"--tasks=2", bytes, "--leader=" + far_leader};
  if (one_way) far_flags.push_back("--heartbeat_timeout_ms=2000");
  Subprocess* far = StartWorker(1, "full", far_flags);
  for (Subprocess* worker : {near, far}) {
    auto code = worker->Wait(absl::Seconds(60));
    ASSERT_TRUE(code.ok()) << code.status();
    EXPECT_EQ(*code, 0) << worker->output();
    EXPECT_THAT(worker->output(), HasSubstr("EVENT barrier ok"));
    EXPECT_THAT(worker->output(), Not(HasSubstr("EVENT error")));
  }
  EXPECT_THAT(far->output(), HasSubstr(absl::StrCat("nccl bytes=", 4 << 20, " intact")));
}

INSTANTIATE_TEST_SUITE_P(Beats, SlowLinkE2eTest, ::testing::Values(false, true),
                         [](const auto& info) {
                           return std::string(info.param ? "OneWay" : "Requests");
                         });

}  // namespace
}  // namespace muster::testing
