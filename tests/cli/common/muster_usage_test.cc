// The muster command's usage contract, as processes see it: --help exits 0, bad command lines
// exit 2 with a message naming the fault, before anything connects.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/cli/cli_process.h"

namespace muster::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MusterUsageTest, NoCommand_ExitsTwoWithUsage) {
  Result result = RunMuster({});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.output, HasSubstr("usage: muster <command>"));
}

TEST(MusterUsageTest, UnknownCommand_ExitsTwo) {
  Result result = RunMuster({"launch"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.output, HasSubstr("unknown command \"launch\""));
}

TEST(MusterUsageTest, Help_ExitsZeroForEveryCommand) {
  EXPECT_EQ(RunMuster({"--help"}).code, 0);
  Result serve = RunMuster({"serve", "--help"});
  EXPECT_EQ(serve.code, 0);
  EXPECT_THAT(serve.output, HasSubstr("--heartbeat-timeout VALUE  (default: 10s)"));
  Result status = RunMuster({"status", "--help"});
  EXPECT_EQ(status.code, 0);
  EXPECT_THAT(status.output, HasSubstr("--json"));
  Result kv = RunMuster({"kv", "--help"});
  EXPECT_EQ(kv.code, 0);
  EXPECT_THAT(kv.output, HasSubstr("get|put|ls|rm|watch"));
  Result rm = RunMuster({"kv", "rm", "--help"});
  EXPECT_EQ(rm.code, 0);
  EXPECT_THAT(rm.output, HasSubstr("-r, --recursive"));
}

TEST(MusterUsageTest, TlsAndTaskHelp_PrintTheirVerbs) {
  Result tls = RunMuster({"tls", "--help"});
  EXPECT_EQ(tls.code, 0) << tls.output;
  EXPECT_THAT(tls.output, HasSubstr("usage: muster tls init DIR"));
  EXPECT_THAT(tls.output, HasSubstr("DIR/cli.pem"));
  EXPECT_THAT(tls.output, Not(HasSubstr("Run `muster tls --help`")));
  Result bare = RunMuster({"tls"});
  EXPECT_EQ(bare.code, 2) << bare.output;
  EXPECT_THAT(bare.output, HasSubstr("usage: muster tls init DIR"));
  Result unknown = RunMuster({"tls", "renew"});
  EXPECT_EQ(unknown.code, 2) << unknown.output;
  EXPECT_THAT(unknown.output, HasSubstr("unknown verb \"renew\""));
  Result task = RunMuster({"task", "--help"});
  EXPECT_EQ(task.code, 0) << task.output;
  EXPECT_THAT(task.output, HasSubstr("usage: muster task reset"));
  Result reset = RunMuster({"task", "reset", "--help"});
  EXPECT_EQ(reset.code, 0) << reset.output;
  EXPECT_THAT(reset.output, HasSubstr("--leader VALUE"));
}

TEST(MusterUsageTest, UnknownFlag_ExitsTwoNamingIt) {
  Result result = RunMuster({"status", "--leader=127.0.0.1:1", "--colour"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.output, HasSubstr("unknown flag --colour for `muster status`"));
}

TEST(MusterUsageTest, FlagOfAnotherCommand_ExitsTwo) {
  Result result = RunMuster({"kv", "get", "--leader=127.0.0.1:1", "--job=worker=1", "k"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.output, HasSubstr("unknown flag --job=worker=1"));
}

TEST(MusterUsageTest, MissingLeader_ExitsTwo) {
  Result result = RunMuster({"kv", "get", "k"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.output, HasSubstr("--leader HOST:PORT is required"));
}

TEST(MusterUsageTest, MalformedLeader_ExitsTwo) {
  Result result = RunMuster({"status", "--leader", "localhost"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.output, HasSubstr("expected HOST:PORT"));
}

TEST(MusterUsageTest, MissingKey_ExitsTwo) {
  Result result = RunMuster({"kv", "get", "--leader=127.0.0.1:1"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.output, HasSubstr("expected 1 argument(s), got 0"));
}

TEST(MusterUsageTest, UnknownKvVerb_ExitsTwo) {
  Result result = RunMuster({"kv", "cat", "--leader=127.0.0.1:1", "k"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.output, HasSubstr("unknown verb \"cat\""));
}

TEST(MusterUsageTest, BadDuration_ExitsTwo) {
  Result result = RunMuster({"status", "--leader=127.0.0.1:1", "--timeout", "soon"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.output, HasSubstr("bad value \"soon\" for --timeout"));
}

TEST(MusterUsageTest, ServeWithoutJob_ExitsTwo) {
  Result result = RunMuster({"serve", "--port=0"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.output, HasSubstr("no job given"));
}

TEST(MusterUsageTest, ServeWithBadJob_ExitsTwo) {
  Result result = RunMuster({"serve", "--port=0", "--job", "worker=zero"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.output, HasSubstr("bad job \"worker=zero\""));
}

TEST(MusterUsageTest, ServeWithConflictingPolicy_ExitsTwo) {
  Result result = RunMuster(
      {"serve", "--port=0", "--job=worker=1", "--recoverable-job=worker", "--policy=fate-sharing"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.output, HasSubstr("--recoverable-job needs --policy recoverable"));
}

}  // namespace
}  // namespace muster::cli
