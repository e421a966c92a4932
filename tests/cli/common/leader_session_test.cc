// cli::LeaderSession, the client side of status, kv and task, in processes of
// tests/cli/programs/session_probe.cc against a real `muster serve` process: a request over the
// leader's frame limit is refused before it is sent and the session stays usable; one the
// leader drops in the middle of its frame fails naming the limit, and the process still exits.
#include <string>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/tools/common/cli_common.h"
#include "tests/cli/cli_process.h"

namespace muster::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Result Probe(const Leader& leader, std::vector<std::string> flags) {
  flags.insert(flags.begin(), {MUSTER_SESSION_PROBE_BIN, "--leader=" + leader.address()});
  auto probe = Subprocess::Start(std::move(flags));
  EXPECT_TRUE(probe.ok()) << probe.status();
  if (!probe.ok()) return {};
  return Finish(**probe, LeaderSession::kShutdownBound + absl::Seconds(10));
}

TEST(LeaderSessionTest, RequestOverTheFrameLimit_ResourceExhaustedNothingSentSessionGoesOn) {
  Leader leader({"--job=worker=1"});
  ASSERT_TRUE(leader.ok());
  // The leader's default limit, 8 MiB, is also the session's.
  Result result = Probe(leader, {"--value_bytes=9437184"});
  EXPECT_EQ(result.code, kExitFailed) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("muster probe: RESOURCE_EXHAUSTED: InsertKeyValueRequest of key probe/big "
                        "is 94372"));
  EXPECT_THAT(result.output,
              HasSubstr("accepts requests of at most 8384512 bytes (its "
                        "--max-frame-size of 8388608 less 4 KiB): nothing was sent"));
  EXPECT_THAT(leader.process().output(), Not(HasSubstr("closed the connection")));
  // Under the limit: stored, and the session goes on.
  Result under = Probe(leader, {"--value_bytes=1048576"});
  EXPECT_EQ(under.code, kExitOk) << under.output;
  EXPECT_THAT(under.output, HasSubstr("PROBE big OK\nPROBE small OK\n"));
}

TEST(LeaderSessionTest, LeaderDropsALargeRequestMidFrame_TheProcessExitsOneNamingTheLimit) {
  Leader leader({"--job=worker=1", "--max-frame-size=65536"});
  ASSERT_TRUE(leader.ok());
  // No limit on the client's side: the request goes out, and the leader closes the connection
  // after the frame's header while most of its 9 MiB are still to be written.
  Result result = Probe(leader, {"--max_frame_size=0", "--value_bytes=9437184"});
  EXPECT_EQ(result.code, kExitFailed) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("muster probe: UNAVAILABLE: lost the leader at " + leader.address()));
  EXPECT_THAT(result.output, HasSubstr("The request was 94372"));
  EXPECT_THAT(result.output, HasSubstr("give this command the leader's --max-frame-size"));
  EXPECT_TRUE(leader.process().WaitForLine("closed the connection from", kBound).ok())
      << leader.process().output();
}

}  // namespace
}  // namespace muster::cli
