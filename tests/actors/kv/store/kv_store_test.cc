// The data of one key-value directory (no actors): values, increments, compare-and-swap,
// listings, deletes, limits, and the changes and revisions each mutation records.
#include "muster/actors/kv/store/kv_store.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Kind = proto::KeyValueChangeEvent;

proto::KeyValueEntry Kv(const std::string& key, const std::string& value) {
  proto::KeyValueEntry kv;
  kv.set_key(key);
  kv.set_value(value);
  return kv;
}

std::vector<std::string> ListKeys(const KvStore& store, const std::string& directory) {
  std::vector<std::string> keys;
  absl::StatusOr<std::vector<proto::KeyValueEntry>> entries = store.List(directory);
  EXPECT_THAT(entries, IsOk());
  if (!entries.ok()) return {"<error>"};
  for (const auto& entry : *entries) keys.push_back(entry.key());
  return keys;
}

class KvStoreTest : public ::testing::Test {
 protected:
  KvStore store_{"d", KvLimits()};
  KvStore::Changes changes_;
};

TEST_F(KvStoreTest, Insert_NewKey_RecordsInsertedWithRevisionOne) {
  ASSERT_THAT(store_.Insert(Kv("d/a", "1"), false, changes_), IsOk());
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].kind(), Kind::INSERTED);
  EXPECT_EQ(changes_[0].key(), "d/a");
  EXPECT_EQ(changes_[0].value(), "1");
  EXPECT_EQ(changes_[0].revision(), 1);
  EXPECT_EQ(store_.revision(), 1);
}

TEST_F(KvStoreTest, Insert_ExistingKeyWithoutOverwrite_AlreadyExistsAndUnchanged) {
  ASSERT_THAT(store_.Insert(Kv("d/a", "1"), false, changes_), IsOk());
  EXPECT_THAT(store_.Insert(Kv("d/a", "2"), false, changes_),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       AllOf(HasSubstr("d/a"), HasSubstr("allow_overwrite"))));
  EXPECT_EQ(*store_.Find("d/a"), "1");
  EXPECT_EQ(store_.revision(), 1);
}

TEST_F(KvStoreTest, Insert_ExistingKeyWithOverwrite_RecordsUpdated) {
  ASSERT_THAT(store_.Insert(Kv("d/a", "1"), false, changes_), IsOk());
  ASSERT_THAT(store_.Insert(Kv("d/a", "2"), true, changes_), IsOk());
  EXPECT_EQ(*store_.Find("d/a"), "2");
  EXPECT_EQ(changes_.back().kind(), Kind::UPDATED);
  EXPECT_EQ(changes_.back().revision(), 2);
}

TEST_F(KvStoreTest, Insert_KeyOfAnotherDirectory_InvalidArgument) {
  EXPECT_THAT(store_.Insert(Kv("e/a", "1"), false, changes_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("directory d")));
}

TEST_F(KvStoreTest, Insert_UnnormalisedKey_InvalidArgument) {
  EXPECT_THAT(store_.Insert(Kv("d//a", "1"), false, changes_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not normalised")));
}

TEST_F(KvStoreTest, Update_AbsentKey_NotFound) {
  EXPECT_THAT(store_.Update(Kv("d/a", "1"), changes_),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("d/a")));
  EXPECT_TRUE(changes_.empty());
}

TEST_F(KvStoreTest, Update_ExistingKey_Replaces) {
  ASSERT_THAT(store_.Insert(Kv("d/a", "1"), false, changes_), IsOk());
  ASSERT_THAT(store_.Update(Kv("d/a", "2"), changes_), IsOk());
  EXPECT_EQ(*store_.Find("d/a"), "2");
}

TEST_F(KvStoreTest, Increment_MissingKey_StartsAtZero) {
  EXPECT_EQ(store_.Increment("d/n", 5, changes_).value(), 5);
  EXPECT_EQ(*store_.Find("d/n"), "5");
  EXPECT_EQ(changes_.back().kind(), Kind::INSERTED);
}

TEST_F(KvStoreTest, Increment_NegativeDelta_Subtracts) {
  ASSERT_THAT(store_.Insert(Kv("d/n", "3"), false, changes_), IsOk());
  EXPECT_EQ(store_.Increment("d/n", -10, changes_).value(), -7);
  EXPECT_EQ(*store_.Find("d/n"), "-7");
}

TEST_F(KvStoreTest, Increment_Beyond32Bits_Works) {
  ASSERT_THAT(store_.Insert(Kv("d/n", "4294967296"), false, changes_), IsOk());
  EXPECT_EQ(store_.Increment("d/n", 1, changes_).value(), 4294967297);
}

TEST_F(KvStoreTest, Increment_NonInteger_FailedPreconditionNamingKeyAndValue) {
  ASSERT_THAT(store_.Insert(Kv("d/n", "abc"), false, changes_), IsOk());
  EXPECT_THAT(store_.Increment("d/n", 1, changes_),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("d/n"), HasSubstr("\"abc\""))));
  EXPECT_EQ(*store_.Find("d/n"), "abc");
}

TEST_F(KvStoreTest, Increment_OverflowUp_OutOfRangeAndUnchanged) {
  std::string max = std::to_string(std::numeric_limits<int64_t>::max());
  ASSERT_THAT(store_.Insert(Kv("d/n", max), false, changes_), IsOk());
  EXPECT_THAT(store_.Increment("d/n", 1, changes_),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("d/n")));
  EXPECT_EQ(*store_.Find("d/n"), max);
}

TEST_F(KvStoreTest, Increment_OverflowDown_OutOfRange) {
  std::string min = std::to_string(std::numeric_limits<int64_t>::min());
  ASSERT_THAT(store_.Insert(Kv("d/n", min), false, changes_), IsOk());
  EXPECT_THAT(store_.Increment("d/n", -1, changes_), StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_EQ(*store_.Find("d/n"), min);
}

TEST_F(KvStoreTest, CompareAndSwap_Matching_SetsDesired) {
  ASSERT_THAT(store_.Insert(Kv("d/a", "old"), false, changes_), IsOk());
  proto::CompareAndSwapRequest request;
  request.set_key("d/a");
  request.set_expected("old");
  request.set_desired("new");
  auto response = store_.CompareAndSwap(request, changes_);
  ASSERT_THAT(response, IsOk());
  EXPECT_TRUE(response->succeeded());
  EXPECT_TRUE(response->exists());
  EXPECT_EQ(response->current(), "new");
  EXPECT_EQ(*store_.Find("d/a"), "new");
  EXPECT_EQ(changes_.back().kind(), Kind::UPDATED);
}

TEST_F(KvStoreTest, CompareAndSwap_ExpectAbsentOnExistingKey_FailsWithCurrent) {
  ASSERT_THAT(store_.Insert(Kv("d/a", "old"), false, changes_), IsOk());
  proto::CompareAndSwapRequest request;
  request.set_key("d/a");
  request.set_desired("new");
  request.set_expect_absent(true);
  auto response = store_.CompareAndSwap(request, changes_);
  ASSERT_THAT(response, IsOk());
  EXPECT_FALSE(response->succeeded());
  EXPECT_EQ(response->current(), "old");
  EXPECT_EQ(store_.revision(), 1);
}

TEST_F(KvStoreTest, CompareAndSwap_AbsentKeyWithoutExpectAbsent_FailsNotExisting) {
  proto::CompareAndSwapRequest request;
  request.set_key("d/a");
  request.set_desired("new");
  auto response = store_.CompareAndSwap(request, changes_);
  ASSERT_THAT(response, IsOk());
  EXPECT_FALSE(response->succeeded());
  EXPECT_FALSE(response->exists());
  EXPECT_EQ(store_.Find("d/a"), nullptr);
}

TEST_F(KvStoreTest, List_Directory_NestedInOrderWithoutSelfOrSiblings) {
  for (const char* key : {"d", "d/x", "d/x/z", "d/x/a/b", "d/x0/y", "d/x_key", "d/w"}) {
    ASSERT_THAT(store_.Insert(Kv(key, "v"), false, changes_), IsOk());
  }
  EXPECT_THAT(ListKeys(store_, "d/x"), ElementsAre("d/x/a/b", "d/x/z"));
  EXPECT_THAT(ListKeys(store_, "d"),
              ElementsAre("d/w", "d/x", "d/x/a/b", "d/x/z", "d/x0/y", "d/x_key"));
  EXPECT_THAT(ListKeys(store_, ""),
              ElementsAre("d", "d/w", "d/x", "d/x/a/b", "d/x/z", "d/x0/y", "d/x_key"));
}

TEST_F(KvStoreTest, List_KeyWithoutChildren_Empty) {
  ASSERT_THAT(store_.Insert(Kv("d/x", "v"), false, changes_), IsOk());
  EXPECT_TRUE(ListKeys(store_, "d/x").empty());
}

TEST_F(KvStoreTest, Delete_Directory_RemovesKeyAndSubtreeOnly) {
  for (const char* key : {"d/x", "d/x/y", "d/x0", "d/x_1", "d/w"}) {
    ASSERT_THAT(store_.Insert(Kv(key, "v"), false, changes_), IsOk());
  }
  changes_.clear();
  ASSERT_THAT(store_.Delete("d/x", true, changes_), IsOk());
  EXPECT_THAT(ListKeys(store_, ""), ElementsAre("d/w", "d/x0", "d/x_1"));
  ASSERT_EQ(changes_.size(), 2u);
  EXPECT_EQ(changes_[0].kind(), Kind::DELETED);
  EXPECT_EQ(changes_[0].key(), "d/x");
  EXPECT_EQ(changes_[1].key(), "d/x/y");
  EXPECT_EQ(changes_[1].revision(), 7);
}

TEST_F(KvStoreTest, Delete_KeyOnly_KeepsSubtree) {
  ASSERT_THAT(store_.Insert(Kv("d/x", "v"), false, changes_), IsOk());
  ASSERT_THAT(store_.Insert(Kv("d/x/y", "v"), false, changes_), IsOk());
  ASSERT_THAT(store_.Delete("d/x", false, changes_), IsOk());
  EXPECT_THAT(ListKeys(store_, ""), ElementsAre("d/x/y"));
}

TEST_F(KvStoreTest, Delete_AbsentKey_OkWithoutChange) {
  ASSERT_THAT(store_.Delete("d/nothing", true, changes_), IsOk());
  EXPECT_TRUE(changes_.empty());
  EXPECT_EQ(store_.revision(), 0);
}

TEST_F(KvStoreTest, Delete_RootWithoutIsDirectory_InvalidArgument) {
  EXPECT_THAT(store_.Delete("", false, changes_), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(KvStoreTest, FullDirectory_NewKeyResourceExhaustedButOverwriteWorks) {
  KvLimits limits;
  limits.max_keys_per_directory = 1;
  KvStore store("d", limits);
  ASSERT_THAT(store.Insert(Kv("d/a", "1"), false, changes_), IsOk());
  EXPECT_THAT(store.Insert(Kv("d/b", "1"), false, changes_),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("d/b")));
  EXPECT_THAT(store.Increment("d/c", 1, changes_), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(store.Insert(Kv("d/a", "2"), true, changes_), IsOk());
}

TEST_F(KvStoreTest, ValueOverLimit_ResourceExhausted) {
  KvLimits limits;
  limits.max_value_bytes = 2;
  KvStore store("d", limits);
  EXPECT_THAT(store.Insert(Kv("d/a", "123"), false, changes_),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("3 bytes")));
  EXPECT_EQ(store.Find("d/a"), nullptr);
}

}  // namespace
}  // namespace muster

namespace muster {
namespace {

// Two directories of one store share its byte budget: growth is refused with
// ResourceExhausted once the total would exceed it, and deletes give bytes back.
TEST(KvStoreBudgetTest, DirectoriesShareTheTotalLimit_RefusedOverItFreedByDeletes) {
  KvLimits limits;
  limits.budget = std::make_shared<KvBudget>(40);
  KvStore a("a", limits);
  KvStore b("b", limits);
  KvStore::Changes changes;
  ASSERT_THAT(a.Insert(Kv("a/k", std::string(17, 'x')), false, changes), IsOk());  // 20 bytes
  ASSERT_THAT(b.Insert(Kv("b/k", std::string(17, 'y')), false, changes), IsOk());  // 40 bytes
  EXPECT_EQ(limits.budget->used(), 40);
  EXPECT_THAT(b.Insert(Kv("b/z", "1"), false, changes),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("limit of 40 bytes"), HasSubstr("--max-store-size"))));
  EXPECT_EQ(b.Find("b/z"), nullptr);
  EXPECT_THAT(a.Update(Kv("a/k", std::string(18, 'x')), changes),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(*a.Find("a/k"), std::string(17, 'x'));
  ASSERT_THAT(a.Update(Kv("a/k", "x"), changes), IsOk());  // shrinks: 16 bytes back
  EXPECT_EQ(limits.budget->used(), 24);
  ASSERT_THAT(b.Delete("b", /*is_directory=*/true, changes), IsOk());
  EXPECT_EQ(limits.budget->used(), 4);
  EXPECT_THAT(b.Insert(Kv("b/z", "1"), false, changes), IsOk());
  {
    KvStore moved = std::move(a);
    EXPECT_EQ(limits.budget->used(), 8);
  }
  EXPECT_EQ(limits.budget->used(), 4);  // a's bytes went back when its store went away
}

}  // namespace
}  // namespace muster
