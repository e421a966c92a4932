// The job-health parts of one key-value directory's data (no actors): ephemeral keys and their
// owners, ReduceKeyValueDir's folds and CountUnder.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/actors/kv/store/kv_store.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Kind = proto::KeyValueChangeEvent;

proto::KeyValueEntry Kv(const std::string& key, const std::string& value) {
  proto::KeyValueEntry kv;
  kv.set_key(key);
  kv.set_value(value);
  return kv;
}

// "<kind> <key> @<revision>" per change.
std::vector<std::string> Describe(const KvStore::Changes& changes) {
  std::vector<std::string> lines;
  for (const auto& change : changes) {
    lines.push_back(
        absl::StrCat(Kind::Kind_Name(change.kind()), " ", change.key(), " @", change.revision()));
  }
  return lines;
}

std::vector<std::string> AllKeys(const KvStore& store) {
  std::vector<std::string> keys;
  auto entries = store.List("");
  EXPECT_THAT(entries, IsOk());
  if (!entries.ok()) return {"<error>"};
  for (const auto& entry : *entries) keys.push_back(entry.key());
  return keys;
}

// The owner of `key` as "<task>#<incarnation>", "" for a persistent or absent key.
std::string OwnerName(const KvStore& store, const std::string& key) {
  const KvOwner* owner = store.OwnerOf(key);
  return owner == nullptr ? "" : absl::StrCat(owner->task, "#", owner->incarnation);
}

class KvStoreHealthTest : public ::testing::Test {
 protected:
  void Put(const std::string& key, const std::string& value, const KvOwner* owner = nullptr) {
    ASSERT_THAT(store_.Insert(Kv(key, value), /*allow_overwrite=*/true, changes_, owner), IsOk());
  }

  const KvOwner worker0_{"/job:worker/task:0", 1};
  const KvOwner worker0_next_{"/job:worker/task:0", 2};  // a later incarnation of the same task
  const KvOwner worker1_{"/job:worker/task:1", 1};
  KvStore store_{"d", KvLimits()};
  KvStore::Changes changes_;
};

TEST_F(KvStoreHealthTest, DropOwner_DeletesOnlyThatOwnersKeysInKeyOrder) {
  Put("d/c", "v", &worker0_);
  Put("d/a/x", "v", &worker0_);
  Put("d/b", "v", &worker1_);
  Put("d/a", "v", &worker0_);
  Put("d/e", "v", &worker0_next_);
  Put("d/p", "v");
  EXPECT_EQ(OwnerName(store_, "d/a"), "/job:worker/task:0#1");
  EXPECT_EQ(OwnerName(store_, "d/p"), "");
  changes_.clear();
  store_.DropOwner(worker0_, changes_);
  EXPECT_THAT(Describe(changes_),
              ElementsAre("DELETED d/a @7", "DELETED d/a/x @8", "DELETED d/c @9"));
  EXPECT_THAT(AllKeys(store_), ElementsAre("d/b", "d/e", "d/p"));
  EXPECT_EQ(store_.OwnerOf("d/a"), nullptr);
  EXPECT_EQ(OwnerName(store_, "d/b"), "/job:worker/task:1#1");
  EXPECT_EQ(OwnerName(store_, "d/e"), "/job:worker/task:0#2");
  changes_.clear();
  store_.DropOwner(worker0_, changes_);  // nothing left of that incarnation
  EXPECT_THAT(changes_, IsEmpty());
  EXPECT_EQ(store_.revision(), 9);
}

TEST_F(KvStoreHealthTest, DropOwner_UnknownOwner_NoChange) {
  Put("d/a", "v", &worker0_);
  changes_.clear();
  store_.DropOwner(KvOwner{"/job:worker/task:7", 1}, changes_);
  store_.DropOwner(KvOwner{"/job:worker/task:0", 0}, changes_);
  EXPECT_THAT(changes_, IsEmpty());
  EXPECT_THAT(AllKeys(store_), ElementsAre("d/a"));
}

TEST_F(KvStoreHealthTest, PersistentOverwrite_ClearsOwnership) {
  Put("d/a", "1", &worker0_);
  Put("d/b", "1", &worker0_);
  Put("d/c", "1", &worker0_);
  ASSERT_THAT(store_.Insert(Kv("d/a", "2"), true, changes_), IsOk());
  ASSERT_THAT(store_.Update(Kv("d/b", "2"), changes_), IsOk());
  proto::CompareAndSwapRequest cas;
  cas.set_key("d/c");
  cas.set_expected("1");
  cas.set_desired("2");
  auto swapped = store_.CompareAndSwap(cas, changes_);
  ASSERT_THAT(swapped, IsOk());
  ASSERT_TRUE(swapped->succeeded());
  for (const char* key : {"d/a", "d/b", "d/c"}) EXPECT_EQ(store_.OwnerOf(key), nullptr) << key;
  changes_.clear();
  store_.DropOwner(worker0_, changes_);
  EXPECT_THAT(changes_, IsEmpty());
  EXPECT_THAT(AllKeys(store_), ElementsAre("d/a", "d/b", "d/c"));
}

TEST_F(KvStoreHealthTest, EphemeralOverwriteOfPersistentKey_TakesOwnership) {
  Put("d/a", "1");
  Put("d/b", "1");
  Put("d/c", "1");
  ASSERT_THAT(store_.Insert(Kv("d/a", "2"), true, changes_, &worker0_), IsOk());
  ASSERT_THAT(store_.Update(Kv("d/b", "2"), changes_, &worker0_), IsOk());
  proto::CompareAndSwapRequest cas;
  cas.set_key("d/c");
  cas.set_expected("1");
  cas.set_desired("2");
  ASSERT_THAT(store_.CompareAndSwap(cas, changes_, &worker0_), IsOk());
  for (const char* key : {"d/a", "d/b", "d/c"}) {
    EXPECT_EQ(OwnerName(store_, key), "/job:worker/task:0#1") << key;
  }
  changes_.clear();
  store_.DropOwner(worker0_, changes_);
  EXPECT_THAT(Describe(changes_),
              ElementsAre("DELETED d/a @7", "DELETED d/b @8", "DELETED d/c @9"));
  EXPECT_THAT(AllKeys(store_), IsEmpty());
}

TEST_F(KvStoreHealthTest, EphemeralOverwriteByAnotherOwner_MovesOwnership) {
  Put("d/a", "1", &worker0_);
  Put("d/a", "2", &worker1_);
  EXPECT_EQ(OwnerName(store_, "d/a"), "/job:worker/task:1#1");
  changes_.clear();
  store_.DropOwner(worker0_, changes_);
  EXPECT_THAT(changes_, IsEmpty());
  store_.DropOwner(worker1_, changes_);
  EXPECT_THAT(Describe(changes_), ElementsAre("DELETED d/a @3"));
}

TEST_F(KvStoreHealthTest, FailedWrites_LeaveOwnershipAsItWas) {
  Put("d/a", "1", &worker0_);
  Put("d/p", "1");
  // Refused without allow_overwrite: d/a keeps its owner, d/p stays persistent.
  EXPECT_THAT(store_.Insert(Kv("d/a", "2"), false, changes_, &worker1_),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(store_.Insert(Kv("d/p", "2"), false, changes_, &worker1_),
              StatusIs(absl::StatusCode::kAlreadyExists));
  // A swap that does not match stores nothing and takes nothing.
  proto::CompareAndSwapRequest cas;
  cas.set_key("d/p");
  cas.set_expected("wrong");
  cas.set_desired("3");
  auto swapped = store_.CompareAndSwap(cas, changes_, &worker1_);
  ASSERT_THAT(swapped, IsOk());
  EXPECT_FALSE(swapped->succeeded());
  EXPECT_EQ(OwnerName(store_, "d/a"), "/job:worker/task:0#1");
  EXPECT_EQ(store_.OwnerOf("d/p"), nullptr);
}

TEST_F(KvStoreHealthTest, EphemeralValueOverLimit_NeitherStoredNorOwned) {
  KvLimits limits;
  limits.max_value_bytes = 2;
  KvStore store("d", limits);
  EXPECT_THAT(store.Insert(Kv("d/a", "123"), false, changes_, &worker0_),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(store.Find("d/a"), nullptr);
  EXPECT_EQ(store.OwnerOf("d/a"), nullptr);
}

TEST_F(KvStoreHealthTest, Increment_ClearsOwnership) {
  Put("d/n", "1", &worker0_);
  ASSERT_THAT(store_.Increment("d/n", 1, changes_), IsOk());
  EXPECT_EQ(store_.OwnerOf("d/n"), nullptr);
  changes_.clear();
  store_.DropOwner(worker0_, changes_);
  EXPECT_THAT(changes_, IsEmpty());
  EXPECT_EQ(*store_.Find("d/n"), "2");
}

TEST_F(KvStoreHealthTest, Delete_ErasesOwnership_ReinsertedKeyIsPersistent) {
  Put("d/a", "1", &worker0_);
  Put("d/x", "1", &worker0_);
  Put("d/x/y", "1", &worker0_);
  ASSERT_THAT(store_.Delete("d/a", false, changes_), IsOk());
  ASSERT_THAT(store_.Delete("d/x", true, changes_), IsOk());
  for (const char* key : {"d/a", "d/x", "d/x/y"}) EXPECT_EQ(store_.OwnerOf(key), nullptr) << key;
  Put("d/a", "2");
  Put("d/x/y", "2");
  changes_.clear();
  store_.DropOwner(worker0_, changes_);
  EXPECT_THAT(changes_, IsEmpty());
  EXPECT_THAT(AllKeys(store_), ElementsAre("d/a", "d/x/y"));
}

TEST_F(KvStoreHealthTest, DropOwner_GivesBytesBackToTheBudget) {
  KvLimits limits;
  limits.budget = std::make_shared<KvBudget>(100);
  KvStore store("d", limits);
  ASSERT_THAT(store.Insert(Kv("d/a", "12345"), false, changes_, &worker0_), IsOk());  // 8 bytes
  ASSERT_THAT(store.Insert(Kv("d/b", "1"), false, changes_), IsOk());                 // 4 bytes
  EXPECT_EQ(limits.budget->used(), 12);
  store.DropOwner(worker0_, changes_);
  EXPECT_EQ(limits.budget->used(), 4);
}

TEST_F(KvStoreHealthTest, MovedStore_KeepsOwners) {
  Put("d/a", "1", &worker0_);
  KvStore moved = std::move(store_);
  EXPECT_EQ(OwnerName(moved, "d/a"), "/job:worker/task:0#1");
  changes_.clear();
  moved.DropOwner(worker0_, changes_);
  EXPECT_THAT(Describe(changes_), ElementsAre("DELETED d/a @2"));
}

// ReduceKeyValueDir folds

class KvStoreReduceTest : public KvStoreHealthTest {
 protected:
  void SetUp() override {
    // Under d/r: 3, -7, 12 and (nested) 5. The directory key itself and siblings whose names
    // start with "r" hold text, so that counting them would fail the fold.
    for (auto [key, value] : std::vector<std::pair<const char*, const char*>>{{"d/r/0", "3"},
                                                                              {"d/r/1", "-7"},
                                                                              {"d/r/2", "12"},
                                                                              {"d/r/sub/3", "5"},
                                                                              {"d/r", "text"},
                                                                              {"d/r0/x", "text"},
                                                                              {"d/rx", "text"}}) {
      Put(key, value);
    }
  }
};

TEST_F(KvStoreReduceTest, Max_EveryKeyUnderTheDirectory) {
  auto reduced = store_.Reduce("d/r", proto::REDUCE_MAX);
  ASSERT_THAT(reduced, IsOk());
  EXPECT_EQ(reduced->value, 12);
  EXPECT_EQ(reduced->count, 4);
}

TEST_F(KvStoreReduceTest, Min_EveryKeyUnderTheDirectory) {
  auto reduced = store_.Reduce("d/r", proto::REDUCE_MIN);
  ASSERT_THAT(reduced, IsOk());
  EXPECT_EQ(reduced->value, -7);
  EXPECT_EQ(reduced->count, 4);
}

TEST_F(KvStoreReduceTest, Sum_EveryKeyUnderTheDirectory) {
  auto reduced = store_.Reduce("d/r", proto::REDUCE_SUM);
  ASSERT_THAT(reduced, IsOk());
  EXPECT_EQ(reduced->value, 13);
  EXPECT_EQ(reduced->count, 4);
}

TEST_F(KvStoreReduceTest, NestedDirectory_OnlyItsKeys) {
  auto reduced = store_.Reduce("d/r/sub", proto::REDUCE_SUM);
  ASSERT_THAT(reduced, IsOk());
  EXPECT_EQ(reduced->value, 5);
  EXPECT_EQ(reduced->count, 1);
}

TEST_F(KvStoreReduceTest, NoKeysUnderTheDirectory_NotFound) {
  EXPECT_THAT(store_.Reduce("d/empty", proto::REDUCE_MAX),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("no keys under d/empty"), HasSubstr("nothing to reduce"))));
  // A key without children is no directory of numbers either.
  EXPECT_THAT(store_.Reduce("d/r/0", proto::REDUCE_SUM), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(KvStoreReduceTest, NonIntegerValue_FailedPreconditionNamingTheKey) {
  Put("d/r/bad", "1.5");
  for (proto::ReduceOp op : {proto::REDUCE_MAX, proto::REDUCE_MIN, proto::REDUCE_SUM}) {
    EXPECT_THAT(store_.Reduce("d/r", op),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         AllOf(HasSubstr("ReduceKeyValueDir of d/r"), HasSubstr("key d/r/bad"),
                               HasSubstr("\"1.5\""), HasSubstr("64-bit signed decimal"))))
        << proto::ReduceOp_Name(op);
  }
}

TEST_F(KvStoreReduceTest, SumOverflow_OutOfRange) {
  const std::string max = std::to_string(std::numeric_limits<int64_t>::max());
  const std::string min = std::to_string(std::numeric_limits<int64_t>::min());
  Put("d/big/a", max);
  Put("d/big/b", "1");
  EXPECT_THAT(store_.Reduce("d/big", proto::REDUCE_SUM),
              StatusIs(absl::StatusCode::kOutOfRange,
                       AllOf(HasSubstr("d/big"), HasSubstr("overflows a 64-bit signed integer"))));
  auto max_of = store_.Reduce("d/big", proto::REDUCE_MAX);  // max and min do not overflow
  ASSERT_THAT(max_of, IsOk());
  EXPECT_EQ(max_of->value, std::numeric_limits<int64_t>::max());
  Put("d/small/a", min);
  Put("d/small/b", "-1");
  EXPECT_THAT(store_.Reduce("d/small", proto::REDUCE_SUM), StatusIs(absl::StatusCode::kOutOfRange));
  Put("d/edge/a", max);
  Put("d/edge/b", min);
  auto edge = store_.Reduce("d/edge", proto::REDUCE_SUM);
  ASSERT_THAT(edge, IsOk());
  EXPECT_EQ(edge->value, -1);
}

TEST_F(KvStoreReduceTest, BadOp_InvalidArgument) {
  EXPECT_THAT(store_.Reduce("d/r", proto::REDUCE_UNSPECIFIED),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("names op 0"), HasSubstr("REDUCE_MAX"))));
  EXPECT_THAT(store_.Reduce("d/r", static_cast<proto::ReduceOp>(42)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("names op 42")));
}

TEST_F(KvStoreReduceTest, BadDirectory_InvalidArgument) {
  EXPECT_THAT(store_.Reduce("e/r", proto::REDUCE_SUM),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("directory d")));
  EXPECT_THAT(store_.Reduce("d//r", proto::REDUCE_SUM),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not normalised")));
  EXPECT_THAT(store_.Reduce("", proto::REDUCE_SUM), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(KvStoreReduceTest, WholeDirectory_ReachesTheTextKeys) {
  EXPECT_THAT(store_.Reduce("d", proto::REDUCE_SUM),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("key d/r ")));
}

TEST_F(KvStoreReduceTest, CountUnder_KeysUnderTheDirectoryAtAnyDepth) {
  EXPECT_EQ(store_.CountUnder("d/r"), 4);
  EXPECT_EQ(store_.CountUnder("d/r/sub"), 1);
  EXPECT_EQ(store_.CountUnder("d/r/0"), 0);
  EXPECT_EQ(store_.CountUnder("d/none"), 0);
  EXPECT_EQ(store_.CountUnder("d"), 7);
  ASSERT_THAT(store_.Delete("d/r/1", false, changes_), IsOk());
  EXPECT_EQ(store_.CountUnder("d/r"), 3);
}

}  // namespace
}  // namespace muster
