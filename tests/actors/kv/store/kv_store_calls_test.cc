// The store's answers to the key-value calls (KvStore::Apply and Read): request in, response
// out, with the changes a write made, as the directory actor hands them every call of
// MUSTER_KV_CALLS but the waiting ones.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/actors/kv/store/kv_store.h"
#include "muster/messages/requests/kv_requests.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::HasSubstr;

class KvStoreCallsTest : public ::testing::Test {
 protected:
  KvStore store_{"d", KvLimits()};
  KvStore::Changes changes_;
};

TEST_F(KvStoreCallsTest, InsertThenTryGet_TheValueUnderItsKey) {
  ASSERT_THAT(store_.Apply(requests::InsertKeyValue("d/a", "1", false), changes_, nullptr),
              IsOk());
  EXPECT_EQ(changes_.size(), 1u);
  absl::StatusOr<proto::TryGetKeyValueResponse> got = store_.Read(requests::TryGetKeyValue("d/a"));
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(got->kv().key(), "d/a");
  EXPECT_EQ(got->kv().value(), "1");
}

TEST_F(KvStoreCallsTest, TryGetOfAnAbsentKey_NotFoundNamingIt) {
  EXPECT_THAT(store_.Read(requests::TryGetKeyValue("d/none")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("d/none")));
}

TEST_F(KvStoreCallsTest, InsertWithoutOverwrite_AlreadyExistsAndNoChange) {
  ASSERT_THAT(store_.Apply(requests::InsertKeyValue("d/a", "1", false), changes_, nullptr),
              IsOk());
  changes_.clear();
  EXPECT_THAT(store_.Apply(requests::InsertKeyValue("d/a", "2", false), changes_, nullptr),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_TRUE(changes_.empty());
}

TEST_F(KvStoreCallsTest, UpdateOfAnAbsentKey_NotFound) {
  EXPECT_THAT(store_.Apply(requests::UpdateKeyValue("d/a", "1"), changes_, nullptr),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(KvStoreCallsTest, Increment_AnswersTheSumUnderTheKey) {
  ASSERT_THAT(store_.Apply(requests::IncrementKeyValue("d/n", 5), changes_, nullptr), IsOk());
  absl::StatusOr<proto::IncrementKeyValueResponse> sum =
      store_.Apply(requests::IncrementKeyValue("d/n", -7), changes_, nullptr);
  ASSERT_THAT(sum, IsOk());
  EXPECT_EQ(sum->kv().key(), "d/n");
  EXPECT_EQ(sum->kv().value(), "-2");
}

TEST_F(KvStoreCallsTest, CompareAndSwap_SwapsOnlyTheExpectedValue) {
  auto first = store_.Apply(requests::CompareAndSwap("d/c", std::nullopt, "x"), changes_, nullptr);
  ASSERT_THAT(first, IsOk());
  EXPECT_TRUE(first->succeeded());
  auto second = store_.Apply(requests::CompareAndSwap("d/c", "y", "z"), changes_, nullptr);
  ASSERT_THAT(second, IsOk());
  EXPECT_FALSE(second->succeeded());
  EXPECT_EQ(second->current(), "x");
}

TEST_F(KvStoreCallsTest, DeleteRecursiveThenGetDir_NothingLeftUnderIt) {
  ASSERT_THAT(store_.Apply(requests::InsertKeyValue("d/x/1", "a", false), changes_, nullptr),
              IsOk());
  ASSERT_THAT(store_.Apply(requests::InsertKeyValue("d/x/2", "b", false), changes_, nullptr),
              IsOk());
  auto listed = store_.Read(requests::GetKeyValueDir("d/x"));
  ASSERT_THAT(listed, IsOk());
  EXPECT_EQ(listed->directory_key(), "d/x");
  EXPECT_EQ(listed->kv_size(), 2);
  ASSERT_THAT(store_.Apply(requests::DeleteKeyValue("d/x", /*recursive=*/true), changes_, nullptr),
              IsOk());
  listed = store_.Read(requests::GetKeyValueDir("d/x"));
  ASSERT_THAT(listed, IsOk());
  EXPECT_EQ(listed->kv_size(), 0);
}

TEST_F(KvStoreCallsTest, ReduceSum_ValueAndCount) {
  ASSERT_THAT(store_.Apply(requests::InsertKeyValue("d/r/1", "3", false), changes_, nullptr),
              IsOk());
  ASSERT_THAT(store_.Apply(requests::InsertKeyValue("d/r/2", "4", false), changes_, nullptr),
              IsOk());
  auto sum = store_.Read(requests::ReduceKeyValueDir("d/r", proto::REDUCE_SUM));
  ASSERT_THAT(sum, IsOk());
  EXPECT_EQ(sum->value(), 7);
  EXPECT_EQ(sum->count(), 2);
  EXPECT_THAT(store_.Read(requests::ReduceKeyValueDir("d/empty", proto::REDUCE_SUM)),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(KvStoreCallsTest, EphemeralInsert_OwnedUntilTheOwnerIsDropped) {
  KvOwner owner{"/job:w/task:0", 7};
  ASSERT_THAT(store_.Apply(requests::InsertKeyValue("d/e", "1", false, /*ephemeral=*/true),
                           changes_, &owner),
              IsOk());
  ASSERT_NE(store_.OwnerOf("d/e"), nullptr);
  store_.DropOwner(owner, changes_);
  EXPECT_THAT(store_.Read(requests::TryGetKeyValue("d/e")),
              StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace muster
