// EtcdStateStore against a real 3-member etcd cluster: what a LevelDB state dir keeps, kept in
// etcd; group commits split into transactions only between units; a lost fence or a lost
// quorum writes nothing and says so.
#include "muster/net/ha/etcd_state_store.h"

#include <unistd.h>

#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/net/ha/etcd_election.h"
#include "tests/net/ha/etcd_cluster.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

std::string LeaderValue(uint32_t format = kStateFormat) {
  proto::LeaderRecord leader;
  leader.set_format(format);
  leader.set_incarnation(77);
  return leader.SerializeAsString();
}

std::string KvValue(const std::string& value) {
  proto::KvRecord record;
  record.set_value(value);
  return record.SerializeAsString();
}

class EtcdStateStoreTest : public testing::SharedEtcdTest {
 protected:
  std::shared_ptr<EtcdStateStore> Open(EtcdStateOptions options = {}) {
    options.name = name_;
    return EtcdStateStore::Open(etcd_, std::move(options));
  }

  // How many keys the job's state has in etcd.
  int64_t Count() {
    etcdserverpb::RangeRequest read;
    read.set_key(HaStatePrefix(name_));
    read.set_range_end(PrefixEnd(HaStatePrefix(name_)));
    read.set_count_only(true);
    auto found = etcd_->Range(read, absl::Seconds(5));
    EXPECT_THAT(found, IsOk());
    return found.ok() ? found->count() : -1;
  }
};

TEST_F(EtcdStateStoreTest, Empty_LoadsFresh) {
  auto state = Open()->Load();
  ASSERT_THAT(state, IsOk());
  EXPECT_TRUE(state->fresh());
  EXPECT_THAT(Open()->location(), HasSubstr("under muster/" + name_ + "/state/"));
}

TEST_F(EtcdStateStoreTest, WrittenRecords_LoadBackInPagesAsTheyWere) {
  auto store = Open();
  StateBatch first;
  first.Put(LeaderStateKey(), LeaderValue());
  proto::TaskRecord task;
  task.mutable_task()->set_job_name("w");
  task.set_incarnation(5);
  first.Put(TaskStateKey("/job:w/task:0"), task.SerializeAsString());
  ASSERT_THAT(store->Write(first), IsOk());
  // 2,500 keys in 25 batches: more than one page of Load().
  for (int b = 0; b < 25; ++b) {
    StateBatch batch;
    for (int i = 0; i < 100; ++i) {
      batch.Put(KvStateKey(absl::StrCat("d/", b * 100 + i)), KvValue(absl::StrCat("v", i)));
    }
    ASSERT_THAT(store->Write(batch), IsOk());
  }
  StateBatch removal;
  removal.Delete(KvStateKey("d/7"));
  ASSERT_THAT(store->Write(removal), IsOk());

  auto state = Open()->Load();
  ASSERT_THAT(state, IsOk());
  EXPECT_FALSE(state->fresh());
  EXPECT_EQ(state->leader().incarnation(), 77u);
  ASSERT_EQ(state->tasks_size(), 1);
  EXPECT_EQ(state->tasks(0).incarnation(), 5u);
  ASSERT_EQ(state->directories_size(), 1);
  EXPECT_EQ(state->directories(0).directory(), "d");
  EXPECT_EQ(state->directories(0).entries_size(), 2499);
}

// etcd's revision: it grows by one per transaction that changed something.
int64_t Revision(EtcdClient& etcd) {
  etcdserverpb::RangeRequest read;
  read.set_key("muster-test/revision");
  auto found = etcd.Range(read, absl::Seconds(5));
  return found.ok() ? found->header().revision() : -1;
}

TEST_F(EtcdStateStoreTest, GroupOverTheTransactionLimit_SplitsBetweenUnitsAndKeepsTheLastOfAKey) {
  // 3 operations per transaction, one of them the write counter: 2 of the state's.
  auto store = Open({.max_txn_ops = 3});
  StateBatch group;
  for (int unit = 0; unit < 10; ++unit) {
    StateBatch batch;
    // Every unit also rewrites the same revision record: once per transaction in etcd.
    batch.Put(KvRevisionStateKey("d"), absl::StrCat("rev-", unit));
    batch.Put(KvStateKey(absl::StrCat("d/", unit)), KvValue("x"));
    group.Append(std::move(batch));
  }
  EXPECT_EQ(group.unit_ends.size(), 9u);
  const int64_t before = Revision(*etcd_);
  ASSERT_THAT(store->Write(group), IsOk());
  // Each unit's two keys fill a transaction: 10, never one that splits a unit.
  EXPECT_EQ(Revision(*etcd_) - before, 10);
  EXPECT_EQ(Count(), 11);
  // With room for 4, three units share one (their revision record once): 4.
  auto roomier = Open({.max_txn_ops = 5});
  const int64_t again = Revision(*etcd_);
  ASSERT_THAT(roomier->Write(group), IsOk());
  EXPECT_EQ(Revision(*etcd_) - again, 4);
  etcdserverpb::RangeRequest read;
  read.set_key(HaStatePrefix(name_) + KvRevisionStateKey("d"));
  auto found = etcd_->Range(read, absl::Seconds(5));
  ASSERT_THAT(found, IsOk());
  ASSERT_EQ(found->kvs_size(), 1);
  EXPECT_EQ(found->kvs(0).value(), "rev-9");
}

TEST_F(EtcdStateStoreTest, UnitOverTheLimit_GoesInPartsAndIsWhole) {
  auto store = Open();  // etcd's default 128 operations per transaction
  StateBatch batch;     // one unit of 300 keys (a trim of old records is such a unit)
  for (int i = 0; i < 300; ++i) batch.Put(KvStateKey(absl::StrCat("d/", i)), KvValue("x"));
  const int64_t before = Revision(*etcd_);
  ASSERT_THAT(store->Write(batch), IsOk());
  EXPECT_EQ(Revision(*etcd_) - before, 3);  // 127 + 127 + 46
  EXPECT_EQ(Count(), 300);
}

TEST_F(EtcdStateStoreTest, OneChangeOverEtcdsRequestLimit_FailsNamingTheLimitToRaise) {
  std::vector<absl::Status> told;
  EtcdStateOptions options{.max_txn_bytes = 8 << 20};
  options.on_failure = [&](const absl::Status& status) { told.push_back(status); };
  auto store = Open(std::move(options));
  StateBatch batch;
  batch.Put(KvStateKey("d/big"), std::string(3 << 20, 'x'));  // over etcd's 1.5 MiB
  EXPECT_THAT(store->Write(batch),
              StatusIs(Code::kInvalidArgument, HasSubstr("--max-request-bytes")));
  EXPECT_EQ(told.size(), 1u);
  EXPECT_EQ(Count(), 0);
}

TEST_F(EtcdStateStoreTest, AnotherWriterMovedTheCounter_IsRefused) {
  auto store = Open();
  StateBatch batch;
  batch.Put(LeaderStateKey(), LeaderValue());
  ASSERT_THAT(store->Write(batch), IsOk());
  auto other = Open();  // a second writer without a fence (what the fence prevents)
  ASSERT_THAT(other->Write(batch), IsOk());
  EXPECT_THAT(store->Write(batch),
              StatusIs(Code::kFailedPrecondition, HasSubstr("another writer changed the state")));
}

TEST_F(EtcdStateStoreTest, AnotherFormat_IsRefusedWithWhatToDo) {
  StateBatch batch;
  batch.Put(LeaderStateKey(), LeaderValue(99));
  ASSERT_THAT(Open()->Write(batch), IsOk());
  EXPECT_THAT(Open()->Load(),
              StatusIs(Code::kFailedPrecondition,
                       AllOf(HasSubstr("format 99"), HasSubstr("etcdctl del --prefix muster/"))));
}

TEST_F(EtcdStateStoreTest, DamagedRecord_IsDataLoss) {
  StateBatch batch;
  batch.Put(LeaderStateKey(), LeaderValue());
  batch.Put(TaskStateKey("x"), "\xff\xff\xff");
  ASSERT_THAT(Open()->Write(batch), IsOk());
  EXPECT_THAT(Open()->Load(),
              StatusIs(Code::kDataLoss, AllOf(HasSubstr("record t/x"), HasSubstr("TaskRecord"),
                                              HasSubstr("etcdctl del"))));
}

TEST_F(EtcdStateStoreTest, FenceLost_NothingOfTheBatchIsWritten) {
  EtcdElection election(etcd_, name_, "me:1", 5);
  auto claim = election.Campaign();
  ASSERT_THAT(claim, IsOk());
  ASSERT_TRUE(election.won(*claim));
  auto store = Open({.fence = election.Fence(*claim)});
  StateBatch batch;
  batch.Put(LeaderStateKey(), LeaderValue());
  ASSERT_THAT(store->Write(batch), IsOk());
  election.Resign();
  StateBatch late;
  late.Put(TaskStateKey("late"), "x");
  EXPECT_THAT(store->Write(late),
              StatusIs(Code::kFailedPrecondition, HasSubstr("no longer the active leader")));
  EXPECT_EQ(Count(), 1);
}

TEST_F(EtcdStateStoreTest, Closed_RefusesWrites) {
  auto store = Open();
  store->Close();
  StateBatch batch;
  batch.Put(LeaderStateKey(), LeaderValue());
  EXPECT_THAT(store->Write(batch), StatusIs(Code::kInternal, HasSubstr("closed")));
}

}  // namespace
}  // namespace muster
