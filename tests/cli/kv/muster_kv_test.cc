// `muster kv` against a real `muster serve` process: round trips, blocking gets, watches and
// the exit codes of failed requests.
#include <csignal>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/cli/cli_process.h"

namespace muster::cli {
namespace {

using ::testing::ContainsRegex;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

class MusterKvTest : public ::testing::Test {
 protected:
  Leader leader_{{"--job=worker=1"}};
};

TEST_F(MusterKvTest, PutThenGet_PrintsTheValue) {
  ASSERT_TRUE(leader_.ok());
  EXPECT_EQ(Kv(leader_, "put", {"config/lr", "0.01"}).code, 0);
  Result get = Kv(leader_, "get", {"config/lr"});
  EXPECT_EQ(get.code, 0) << get.output;
  EXPECT_EQ(get.output, "0.01\n");
}

TEST_F(MusterKvTest, Ls_ListsKeysUnderTheDirectoryInOrder) {
  ASSERT_TRUE(leader_.ok());
  ASSERT_EQ(Kv(leader_, "put", {"config/b", "2"}).code, 0);
  ASSERT_EQ(Kv(leader_, "put", {"config/a", "1"}).code, 0);
  ASSERT_EQ(Kv(leader_, "put", {"other/x", "9"}).code, 0);
  Result ls = Kv(leader_, "ls", {"config"});
  EXPECT_EQ(ls.code, 0) << ls.output;
  EXPECT_EQ(ls.output, "config/a\t1\nconfig/b\t2\n");
  Result all = Kv(leader_, "ls", {});
  EXPECT_EQ(all.output, "config/a\t1\nconfig/b\t2\nother/x\t9\n");
}

TEST_F(MusterKvTest, Rm_DeletesTheKey) {
  ASSERT_TRUE(leader_.ok());
  ASSERT_EQ(Kv(leader_, "put", {"config/a", "1"}).code, 0);
  EXPECT_EQ(Kv(leader_, "rm", {"config/a"}).code, 0);
  Result get = Kv(leader_, "get", {"config/a"});
  EXPECT_EQ(get.code, 1);
  EXPECT_THAT(get.output, HasSubstr("NOT_FOUND"));
}

TEST_F(MusterKvTest, RmRecursive_DeletesEveryKeyUnderTheDirectory) {
  ASSERT_TRUE(leader_.ok());
  ASSERT_EQ(Kv(leader_, "put", {"nccl/id/0", "a"}).code, 0);
  ASSERT_EQ(Kv(leader_, "put", {"nccl/id/1", "b"}).code, 0);
  ASSERT_EQ(Kv(leader_, "put", {"keep/me", "c"}).code, 0);
  EXPECT_EQ(Kv(leader_, "rm", {"-r", "nccl"}).code, 0);
  EXPECT_EQ(Kv(leader_, "ls", {}).output, "keep/me\tc\n");
}

TEST_F(MusterKvTest, RmDirectoryWithoutR_FailedPreconditionNamingItAndNothingDeleted) {
  ASSERT_TRUE(leader_.ok());
  ASSERT_EQ(Kv(leader_, "put", {"nccl/id/0", "a"}).code, 0);
  ASSERT_EQ(Kv(leader_, "put", {"nccl/id/1", "b"}).code, 0);
  Result refused = Kv(leader_, "rm", {"nccl"});
  EXPECT_EQ(refused.code, 1) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("muster kv rm: FAILED_PRECONDITION: nccl is a directory "
                                        "(2 keys under nccl/); nothing was deleted: use -r"));
  EXPECT_EQ(Kv(leader_, "ls", {}).output, "nccl/id/0\ta\nnccl/id/1\tb\n");
  // A key that is missing altogether is still fine, and one that exists is deleted.
  EXPECT_EQ(Kv(leader_, "rm", {"no/such/key"}).code, 0);
  EXPECT_EQ(Kv(leader_, "rm", {"nccl/id/1"}).code, 0);
  EXPECT_EQ(Kv(leader_, "ls", {}).output, "nccl/id/0\ta\n");
}

TEST_F(MusterKvTest, RmRecursiveRoot_RefusedWithoutAllKeysKept) {
  ASSERT_TRUE(leader_.ok());
  ASSERT_EQ(Kv(leader_, "put", {"keep/me", "c"}).code, 0);
  Result refused = Kv(leader_, "rm", {"-r", "/"});
  EXPECT_EQ(refused.code, 1);
  EXPECT_THAT(refused.output, HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(refused.output, HasSubstr("--all"));
  EXPECT_EQ(Kv(leader_, "ls", {}).output, "keep/me\tc\n");
  EXPECT_EQ(Kv(leader_, "rm", {"-r", "--all", "/"}).code, 0);
  EXPECT_EQ(Kv(leader_, "ls", {}).output, "");
}

TEST_F(MusterKvTest, Ls_KeyWithNewline_PrintedEscapedOnOneLine) {
  ASSERT_TRUE(leader_.ok());
  ASSERT_EQ(Kv(leader_, "put", {"odd/a\nb", "v\t1"}).code, 0);
  EXPECT_EQ(Kv(leader_, "ls", {"odd"}).output, "odd/a\\nb\tv\\t1\n");
}

TEST_F(MusterKvTest, GetMissingKey_ExitsOneWithNotFound) {
  ASSERT_TRUE(leader_.ok());
  Result get = Kv(leader_, "get", {"config/missing"});
  EXPECT_EQ(get.code, 1);
  EXPECT_THAT(get.output, HasSubstr("muster kv get: NOT_FOUND: "));
  EXPECT_THAT(get.output, HasSubstr("config/missing"));
}

TEST(MusterKvNoLeaderTest, WrongAddress_FailsAtOnceSayingNothingListens) {
  absl::Time start = absl::Now();
  Result get = RunMuster({"kv", "get", "--leader=127.0.0.1:1", "config/lr"});  // --timeout: 10s
  EXPECT_EQ(get.code, 1);
  EXPECT_THAT(get.output,
              HasSubstr("muster kv get: UNAVAILABLE: nothing listening at 127.0.0.1:1"));
  EXPECT_THAT(get.output, Not(HasSubstr("ip_connect")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST_F(MusterKvTest, PutNoOverwrite_ExistingKey_ExitsOneAndKeepsTheValue) {
  ASSERT_TRUE(leader_.ok());
  ASSERT_EQ(Kv(leader_, "put", {"config/a", "first"}).code, 0);
  Result put = Kv(leader_, "put", {"--no-overwrite", "config/a", "second"});
  EXPECT_EQ(put.code, 1);
  EXPECT_THAT(put.output, HasSubstr("ALREADY_EXISTS"));
  EXPECT_EQ(Kv(leader_, "get", {"config/a"}).output, "first\n");
}

TEST_F(MusterKvTest, PutOverwrite_ReplacesTheValue) {
  ASSERT_TRUE(leader_.ok());
  ASSERT_EQ(Kv(leader_, "put", {"config/a", "first"}).code, 0);
  ASSERT_EQ(Kv(leader_, "put", {"config/a", "second"}).code, 0);
  EXPECT_EQ(Kv(leader_, "get", {"config/a"}).output, "second\n");
}

TEST_F(MusterKvTest, GetWait_IsReleasedByALaterPut) {
  ASSERT_TRUE(leader_.ok());
  auto waiter =
      StartMuster({"kv", "get", leader_.leader_flag(), "--wait", "--timeout=15s", "config/late"});
  ASSERT_NE(waiter, nullptr);
  // The waiter prints this once connected, as it sends its request.
  ASSERT_TRUE(waiter->WaitForLine("waiting for config/late", kBound).ok()) << waiter->output();
  ASSERT_EQ(Kv(leader_, "put", {"config/late", "here"}).code, 0);
  Result get = Finish(*waiter);
  EXPECT_EQ(get.code, 0) << get.output;
  EXPECT_THAT(get.output, EndsWith("\nhere\n"));
}

TEST_F(MusterKvTest, GetWait_TimesOutWithDeadlineExceeded) {
  ASSERT_TRUE(leader_.ok());
  absl::Time start = absl::Now();
  Result get = Kv(leader_, "get", {"--wait", "--timeout", "300ms", "config/never"});
  EXPECT_EQ(get.code, 1);
  EXPECT_THAT(get.output, HasSubstr("DEADLINE_EXCEEDED"));
  EXPECT_THAT(get.output, HasSubstr("config/never"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(MusterKvTest, Watch_PrintsThreeEventsInOrderAndExits) {
  ASSERT_TRUE(leader_.ok());
  auto watch = StartMuster({"kv", "watch", leader_.leader_flag(), "--count", "3", "config"});
  ASSERT_NE(watch, nullptr);
  ASSERT_TRUE(watch->WaitForLine("watching config", kBound).ok()) << watch->output();
  ASSERT_EQ(Kv(leader_, "put", {"config/a", "1"}).code, 0);
  ASSERT_EQ(Kv(leader_, "put", {"config/a", "2"}).code, 0);
  ASSERT_EQ(Kv(leader_, "rm", {"config/a"}).code, 0);
  Result result = Finish(*watch);
  EXPECT_EQ(result.code, 0) << result.output;
  EXPECT_THAT(result.output, ContainsRegex("INSERTED config/a revision=([0-9]+) value=1\n"
                                           "UPDATED config/a revision=[0-9]+ value=2\n"
                                           "DELETED config/a revision=[0-9]+\n"));
}

TEST_F(MusterKvTest, Watch_SigintStopsItWithExitZero) {
  ASSERT_TRUE(leader_.ok());
  auto watch = StartMuster({"kv", "watch", leader_.leader_flag(), "config"});
  ASSERT_NE(watch, nullptr);
  ASSERT_TRUE(watch->WaitForLine("watching config", kBound).ok()) << watch->output();
  ASSERT_EQ(Kv(leader_, "put", {"config/a", "1"}).code, 0);
  ASSERT_TRUE(watch->WaitForLine("INSERTED config/a", kBound).ok()) << watch->output();
  watch->Signal(SIGINT);
  Result result = Finish(*watch);
  EXPECT_EQ(result.code, 0) << result.output;
}

TEST_F(MusterKvTest, Watch_LeaderStops_ExitsOneNamingTheLeader) {
  ASSERT_TRUE(leader_.ok());
  auto watch = StartMuster({"kv", "watch", leader_.leader_flag(), "config"});
  ASSERT_NE(watch, nullptr);
  ASSERT_TRUE(watch->WaitForLine("watching config", kBound).ok()) << watch->output();
  leader_.process().Signal(SIGKILL);
  Result result = Finish(*watch);
  EXPECT_EQ(result.code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("UNAVAILABLE: lost the leader at " + leader_.address()));
}

TEST_F(MusterKvTest, WatchRoot_ExitsOneWithInvalidArgument) {
  ASSERT_TRUE(leader_.ok());
  Result watch = Kv(leader_, "watch", {"/"});
  EXPECT_EQ(watch.code, 1);
  EXPECT_THAT(watch.output, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(watch.output, Not(HasSubstr("watching")));
}

// A leader started with a small --max-frame-size: `kv put` given the same limit refuses a larger
// value itself; without it the leader drops the connection, and the message says what to give.
TEST(MusterKvFrameLimitTest, PutOverTheLeadersFrameLimit_ResourceExhaustedBeforeSending) {
  Leader leader({"--job=worker=1", "--max-frame-size=65536"});
  ASSERT_TRUE(leader.ok());
  std::string value(100000, 'x');
  Result refused = Kv(leader, "put", {"--max-frame-size=65536", "big/value", value});
  EXPECT_EQ(refused.code, 1) << refused.output;
  EXPECT_THAT(refused.output,
              HasSubstr("muster kv put: RESOURCE_EXHAUSTED: InsertKeyValueRequest of key "
                        "big/value is 1000"));
  EXPECT_THAT(refused.output, HasSubstr("at most 61440 bytes (its --max-frame-size of 65536"));
  EXPECT_THAT(refused.output, HasSubstr("nothing was sent"));
  EXPECT_THAT(leader.process().output(), Not(HasSubstr("closed the connection")));
  Result dropped = Kv(leader, "put", {"big/value", value});
  EXPECT_EQ(dropped.code, 1) << dropped.output;
  EXPECT_THAT(dropped.output, HasSubstr("UNAVAILABLE: lost the leader at " + leader.address()));
  EXPECT_THAT(dropped.output, HasSubstr("give this command the leader's --max-frame-size"));
  Result get = Kv(leader, "get", {"big/value"});
  EXPECT_EQ(get.code, 1) << get.output;
  EXPECT_THAT(get.output, HasSubstr("NOT_FOUND"));
}

}  // namespace
}  // namespace muster::cli
