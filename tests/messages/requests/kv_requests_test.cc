#include "muster/messages/requests/kv_requests.h"

#include <gtest/gtest.h>

#include "muster/messages/requests/wire_timeouts.h"

namespace muster::requests {
namespace {

TEST(KvRequestsTest, GetKeyValueEncodesNoTimeoutAsZero) {
  proto::GetKeyValueRequest forever = GetKeyValue("a/b");
  EXPECT_EQ(forever.key(), "a/b");
  EXPECT_EQ(forever.timeout_in_ms(), 0);
  EXPECT_EQ(GetKeyValue("a/b", absl::Seconds(3)).timeout_in_ms(), 3000);
}

TEST(KvRequestsTest, ReadsNameTheirKeyOrDirectory) {
  EXPECT_EQ(TryGetKeyValue("k").key(), "k");
  EXPECT_EQ(GetKeyValueDir("dir").directory_key(), "dir");
  EXPECT_EQ(GetKeyValueDir("").ByteSizeLong(), 0u);  // the whole store: nothing set
  EXPECT_EQ(StopWatchKey("k").key(), "k");
  proto::WatchKeyRequest watch = WatchKey("k");
  EXPECT_EQ(watch.key(), "k");
  EXPECT_EQ(watch.from_revision(), 0);
  EXPECT_EQ(WatchKey("k", 42).from_revision(), 42);
}

TEST(KvRequestsTest, WritesCarryTheirFlagsAndNoSourceTask) {
  proto::InsertKeyValueRequest insert = InsertKeyValue("k", "v", /*allow_overwrite=*/true);
  EXPECT_EQ(insert.kv().key(), "k");
  EXPECT_EQ(insert.kv().value(), "v");
  EXPECT_TRUE(insert.allow_overwrite());
  EXPECT_FALSE(insert.ephemeral());
  EXPECT_FALSE(insert.has_source_task());  // the agent fills it in
  EXPECT_TRUE(InsertKeyValue("k", "v", false, /*ephemeral=*/true).ephemeral());

  proto::UpdateKeyValueRequest update = UpdateKeyValue("k", "w", /*ephemeral=*/true);
  EXPECT_EQ(update.kv().value(), "w");
  EXPECT_TRUE(update.ephemeral());

  proto::IncrementKeyValueRequest increment = IncrementKeyValue("n", -3);
  EXPECT_EQ(increment.key(), "n");
  EXPECT_EQ(increment.increment(), -3);
}

TEST(KvRequestsTest, DeleteKeyValueIsRecursiveOnlyWhenAsked) {
  proto::DeleteKeyValueRequest one = DeleteKeyValue("k", /*recursive=*/false);
  EXPECT_EQ(one.key(), "k");
  EXPECT_FALSE(one.is_directory());
  EXPECT_FALSE(one.delete_root());
  proto::DeleteKeyValueRequest all = DeleteKeyValue("/", true, /*delete_root=*/true);
  EXPECT_TRUE(all.is_directory());
  EXPECT_TRUE(all.delete_root());
}

TEST(KvRequestsTest, CompareAndSwapExpectsAbsentWithoutAnExpectedValue) {
  proto::CompareAndSwapRequest absent = CompareAndSwap("k", std::nullopt, "new");
  EXPECT_TRUE(absent.expect_absent());
  EXPECT_EQ(absent.expected(), "");
  EXPECT_EQ(absent.desired(), "new");
  EXPECT_FALSE(absent.ephemeral());
  proto::CompareAndSwapRequest swap = CompareAndSwap("k", "old", "new", /*ephemeral=*/true);
  EXPECT_FALSE(swap.expect_absent());
  EXPECT_EQ(swap.expected(), "old");
  EXPECT_TRUE(swap.ephemeral());
  // An expected empty value is not "absent".
  EXPECT_FALSE(CompareAndSwap("k", std::string(), "new").expect_absent());
}

TEST(KvRequestsTest, ReduceKeyValueDirNamesTheOp) {
  proto::ReduceKeyValueDirRequest reduce = ReduceKeyValueDir("steps", proto::REDUCE_MAX);
  EXPECT_EQ(reduce.directory_key(), "steps");
  EXPECT_EQ(reduce.op(), proto::REDUCE_MAX);
}

TEST(KvRequestsTest, WaitForKeysWaitsAtLeastOneMillisecondUnlessForever) {
  proto::WaitForKeysRequest forever = WaitForKeys("peers", 4);
  EXPECT_EQ(forever.directory_key(), "peers");
  EXPECT_EQ(forever.count(), 4);
  EXPECT_EQ(forever.timeout_in_ms(), 0);
  EXPECT_EQ(WaitForKeys("peers", 4, absl::Seconds(2)).timeout_in_ms(), 2000);
  EXPECT_EQ(WaitForKeys("peers", 4, absl::ZeroDuration()).timeout_in_ms(), 1);
  EXPECT_EQ(WaitForKeys("peers", 4, absl::Microseconds(300)).timeout_in_ms(), 1);
}

}  // namespace
}  // namespace muster::requests
