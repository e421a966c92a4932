// The state dir (a real LevelDB in a fresh temporary dir per test): what a leader writes comes
// back after a reopen; a locked dir, another format, missing or unparseable records and damaged
// files are refused with the documented codes; a torn last write loses only that write.
#include "muster/actors/durability/state_store.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <absl/strings/cord.h>
#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "muster/messages/task_name.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

namespace fs = std::filesystem;

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

class StateStoreTest : public ::testing::Test {
 protected:
  StateStoreTest() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::path(::testing::TempDir()) /
            absl::StrCat("muster_state_", info->name(), "_", getpid()))
               .string();
    fs::remove_all(dir_);
  }
  ~StateStoreTest() override { fs::remove_all(dir_); }

  std::shared_ptr<StateStore> OpenOk() {
    auto store = StateStore::Open(dir_);
    EXPECT_THAT(store, IsOk());
    return store.ok() ? *store : nullptr;
  }

  static std::string LeaderValue(uint32_t format = kStateFormat, uint64_t incarnation = 7) {
    proto::LeaderRecord leader;
    leader.set_format(format);
    leader.set_incarnation(incarnation);
    leader.set_version(12);
    leader.set_round(3);
    leader.add_started_unix_ms(1000);
    return leader.SerializeAsString();
  }

  // The newest file of the dir whose name ends with `suffix` (file numbers grow).
  std::string Newest(const std::string& suffix) const {
    std::string best;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      std::string name = entry.path().filename().string();
      if (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 && name > best) {
        best = name;
      }
    }
    EXPECT_FALSE(best.empty()) << "no *" << suffix << " in " << dir_;
    return (fs::path(dir_) / best).string();
  }

  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  // Overwrites `count` bytes of `path` at `offset` with seeded random bytes.
  static void Scribble(const std::string& path, size_t offset, size_t count, uint32_t seed) {
    std::mt19937 random(seed);
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(file.is_open()) << path;
    file.seekp(static_cast<std::streamoff>(offset));
    for (size_t i = 0; i < count; ++i) file.put(static_cast<char>(random() & 0xff));
    ASSERT_TRUE(file.good()) << path;
  }

  // Writes 100 synced batches: the leader record with k/d/0, then k/d/<i> alone.
  void WriteHundredBatches() {
    auto store = OpenOk();
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 100; ++i) {
      StateBatch batch;
      if (i == 0) batch.Put(LeaderStateKey(), LeaderValue());
      proto::KvRecord record;
      record.set_value(absl::StrCat("value-", i));
      batch.Put(KvStateKey(absl::StrCat("d/", i)), record.SerializeAsString());
      ASSERT_THAT(store->Write(batch), IsOk());
    }
  }

  std::string dir_;
};

TEST(StateBatchTest, Append_KeepsEachBatchAUnit) {
  StateBatch a;
  a.Put("k/1", "x");
  a.Put("k/2", "y");
  StateBatch b;
  b.Delete("k/1");
  StateBatch joined;
  joined.Append(std::move(a));
  joined.Append(StateBatch());  // nothing: no unit
  joined.Append(std::move(b));
  StateBatch c;
  c.Append(std::move(joined));  // units kept through a second join
  c.Put("k/3", "z");            // joins the last unit
  ASSERT_EQ(c.ops.size(), 4u);
  EXPECT_EQ(c.unit_ends, (std::vector<size_t>{2}));
  EXPECT_EQ(c.ops[2].first, "k/1");
  EXPECT_FALSE(c.ops[2].second.has_value());
  c.Clear();
  EXPECT_TRUE(c.empty());
  EXPECT_TRUE(c.unit_ends.empty());
}

TEST_F(StateStoreTest, FreshDir_LoadsFreshAndEmpty) {
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->location(), dir_);
  auto state = store->Load();
  ASSERT_THAT(state, IsOk());
  EXPECT_TRUE(state->fresh());
  EXPECT_EQ(state->tasks_size(), 0);
  EXPECT_EQ(state->barriers_size(), 0);
  EXPECT_EQ(state->directories_size(), 0);
}

TEST_F(StateStoreTest, Keys_FixedWidthHexSortNumerically) {
  EXPECT_EQ(LeaderStateKey(), "m/leader");
  EXPECT_EQ(TaskStateKey("/job:worker/task:0"), "t//job:worker/task:0");
  EXPECT_EQ(BarrierStateKey("b"), "b/b");
  EXPECT_EQ(KvStateKey("d/x"), "k/d/x");
  EXPECT_EQ(KvRevisionStateKey("d"), "r/d");
  EXPECT_EQ(KvHistoryStateKey("d", 255), "h/d/00000000000000ff");
  EXPECT_EQ(KvReplyStateKey("d", 5, 16), "d/d/0000000000000005/0000000000000010");
  EXPECT_LT(KvHistoryStateKey("d", 9), KvHistoryStateKey("d", 10));
}

TEST_F(StateStoreTest, WrittenBatch_ComesBackAfterReopen) {
  {
    auto store = OpenOk();
    ASSERT_NE(store, nullptr);
    StateBatch batch;
    batch.Put(LeaderStateKey(), LeaderValue());
    proto::TaskRecord task;
    *task.mutable_task() = MakeTask("worker", 0);
    task.set_state(proto::TASKSTATE_CONNECTED);
    task.set_incarnation(100);
    task.set_generation(2);
    batch.Put(TaskStateKey(TaskName(task.task())), task.SerializeAsString());
    proto::BarrierRecord barrier;
    barrier.set_id("b");
    barrier.set_counter(4);
    *barrier.mutable_result() = StoreStatus(absl::DeadlineExceededError("late"));
    batch.Put(BarrierStateKey("b"), barrier.SerializeAsString());
    proto::KvRecord kv;
    kv.set_value("1");
    kv.set_owner_task("/job:worker/task:0");
    kv.set_owner_incarnation(100);
    batch.Put(KvStateKey("d/x"), kv.SerializeAsString());
    proto::KvRevisionRecord revision;
    revision.set_revision(5);
    batch.Put(KvRevisionStateKey("d"), revision.SerializeAsString());
    proto::KvHistoryRecord history;
    history.mutable_event()->set_kind(proto::KeyValueChangeEvent::INSERTED);
    history.mutable_event()->set_key("d/x");
    history.mutable_event()->set_value("1");
    history.mutable_event()->set_revision(5);
    batch.Put(KvHistoryStateKey("d", 5), history.SerializeAsString());
    proto::StoredReply reply;
    *reply.mutable_status() = StoreStatus(absl::OkStatus());
    reply.set_response("serialised");
    ASSERT_EQ(KvReplyStateKey("d", 0xabc, 9), "d/d/0000000000000abc/0000000000000009");
    batch.Put(KvReplyStateKey("d", 0xabc, 9), reply.SerializeAsString());
    // A put then a delete of the same key in one batch: the delete wins.
    batch.Put(KvStateKey("d/gone"), kv.SerializeAsString());
    batch.Delete(KvStateKey("d/gone"));
    ASSERT_THAT(store->Write(batch), IsOk());
  }
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  auto state = store->Load();
  ASSERT_THAT(state, IsOk());
  EXPECT_FALSE(state->fresh());
  EXPECT_EQ(state->leader().format(), kStateFormat);
  EXPECT_EQ(state->leader().incarnation(), 7u);
  EXPECT_EQ(state->leader().version(), 12);
  EXPECT_EQ(state->leader().round(), 3);
  ASSERT_EQ(state->tasks_size(), 1);
  EXPECT_EQ(TaskName(state->tasks(0).task()), "/job:worker/task:0");
  EXPECT_EQ(state->tasks(0).state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(state->tasks(0).incarnation(), 100u);
  EXPECT_EQ(state->tasks(0).generation(), 2);
  ASSERT_EQ(state->barriers_size(), 1);
  EXPECT_EQ(state->barriers(0).id(), "b");
  EXPECT_EQ(state->barriers(0).counter(), 4);
  EXPECT_THAT(LoadStatus(state->barriers(0).result()), StatusIs(Code::kDeadlineExceeded, "late"));
  ASSERT_EQ(state->directories_size(), 1);
  const proto::RecoveredKvDirectory& d = state->directories(0);
  EXPECT_EQ(d.directory(), "d");
  EXPECT_EQ(d.revision(), 5);
  ASSERT_EQ(d.entries_size(), 1);
  EXPECT_EQ(d.entries(0).key(), "d/x");
  EXPECT_EQ(d.entries(0).value(), "1");
  ASSERT_EQ(d.records_size(), 1);
  EXPECT_EQ(d.records(0).value(), "");  // the value is in the entry only
  EXPECT_EQ(d.records(0).owner_task(), "/job:worker/task:0");
  EXPECT_EQ(d.records(0).owner_incarnation(), 100u);
  ASSERT_EQ(d.history_size(), 1);
  EXPECT_EQ(d.history(0).key(), "d/x");
  EXPECT_EQ(d.history(0).revision(), 5);
  ASSERT_EQ(d.replies_size(), 1);
  EXPECT_EQ(d.replies(0).client(), 0xabcu);
  EXPECT_EQ(d.replies(0).seq(), 9u);
  EXPECT_EQ(d.replies(0).reply().response(), "serialised");
  EXPECT_EQ(d.replies(0).reply().status().code(), 0);
}

TEST_F(StateStoreTest, Load_EntriesInKeyOrderHistoryInRevisionOrderPerDirectory) {
  {
    auto store = OpenOk();
    ASSERT_NE(store, nullptr);
    StateBatch batch;
    batch.Put(LeaderStateKey(), LeaderValue());
    for (const char* key : {"b/z", "a/y", "b/a", "a"}) {
      proto::KvRecord record;
      record.set_value(key);
      batch.Put(KvStateKey(key), record.SerializeAsString());
    }
    for (int64_t revision : {10, 9, 255, 16}) {
      proto::KvHistoryRecord history;
      history.mutable_event()->set_key("b/z");
      history.mutable_event()->set_revision(revision);
      batch.Put(KvHistoryStateKey("b", revision), history.SerializeAsString());
    }
    ASSERT_THAT(store->Write(batch), IsOk());
  }
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  auto state = store->Load();
  ASSERT_THAT(state, IsOk());
  ASSERT_EQ(state->directories_size(), 2);
  const auto& a = state->directories(0);
  const auto& b = state->directories(1);
  EXPECT_EQ(a.directory(), "a");
  EXPECT_EQ(b.directory(), "b");
  ASSERT_EQ(a.entries_size(), 2);
  EXPECT_EQ(a.entries(0).key(), "a");
  EXPECT_EQ(a.entries(1).key(), "a/y");
  ASSERT_EQ(b.entries_size(), 2);
  EXPECT_EQ(b.entries(0).key(), "b/a");
  EXPECT_EQ(b.entries(1).value(), "b/z");
  std::vector<int64_t> revisions;
  for (const auto& event : b.history()) revisions.push_back(event.revision());
  EXPECT_THAT(revisions, ::testing::ElementsAre(9, 10, 16, 255));
}

TEST_F(StateStoreTest, SecondOpenWhileOpen_FailedPreconditionNamingTheDir) {
  auto first = OpenOk();
  ASSERT_NE(first, nullptr);
  EXPECT_THAT(StateStore::Open(dir_),
              StatusIs(Code::kFailedPrecondition,
                       AllOf(HasSubstr(dir_), HasSubstr("in use by another leader"))));
  first.reset();  // the lock goes with the store
  EXPECT_THAT(StateStore::Open(dir_), IsOk());
}

TEST_F(StateStoreTest, OtherFormat_FailedPreconditionNamingIt) {
  {
    auto store = OpenOk();
    ASSERT_NE(store, nullptr);
    StateBatch batch;
    batch.Put(LeaderStateKey(), LeaderValue(/*format=*/99));
    ASSERT_THAT(store->Write(batch), IsOk());
  }
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->Load(),
              StatusIs(Code::kFailedPrecondition,
                       AllOf(HasSubstr("format 99"), HasSubstr(dir_),
                             HasSubstr(absl::StrCat("reads format ", kStateFormat)))));
}

TEST_F(StateStoreTest, RecordsWithoutLeaderRecord_DataLoss) {
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  StateBatch batch;
  proto::KvRecord record;
  record.set_value("1");
  batch.Put(KvStateKey("d/x"), record.SerializeAsString());
  ASSERT_THAT(store->Write(batch), IsOk());
  EXPECT_THAT(store->Load(),
              StatusIs(Code::kDataLoss, AllOf(HasSubstr("m/leader"), HasSubstr("damaged"))));
}

TEST_F(StateStoreTest, RecordThatDoesNotParse_DataLossNamingIt) {
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  StateBatch batch;
  batch.Put(LeaderStateKey(), LeaderValue());
  batch.Put("t/x", "\xff\xff\xff");
  ASSERT_THAT(store->Write(batch), IsOk());
  EXPECT_THAT(store->Load(),
              StatusIs(Code::kDataLoss, AllOf(HasSubstr("record t/x"), HasSubstr("3 bytes"),
                                              HasSubstr("TaskRecord"), HasSubstr(dir_))));
}

TEST_F(StateStoreTest, UnknownRecordOrMalformedReplyKey_DataLoss) {
  {
    auto store = OpenOk();
    ASSERT_NE(store, nullptr);
    StateBatch batch;
    batch.Put(LeaderStateKey(), LeaderValue());
    batch.Put("z/what", "");
    ASSERT_THAT(store->Write(batch), IsOk());
    EXPECT_THAT(store->Load(), StatusIs(Code::kDataLoss, HasSubstr("unknown record z/what")));
  }
  fs::remove_all(dir_);
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  StateBatch batch;
  batch.Put(LeaderStateKey(), LeaderValue());
  batch.Put("d/d/notahexclient/1", "");
  ASSERT_THAT(store->Write(batch), IsOk());
  EXPECT_THAT(store->Load(),
              StatusIs(Code::kDataLoss, HasSubstr("reply key d/d/notahexclient/1 is malformed")));
}

// LevelDB takes a log record cut short at the end of the newest log for a write that never
// completed (never acknowledged): it is dropped, everything before it stays.
TEST_F(StateStoreTest, TornLastWrite_LosesOnlyThatWrite) {
  WriteHundredBatches();
  std::string log = Newest(".log");
  auto size = fs::file_size(log);
  ASSERT_GT(size, 3u);
  fs::resize_file(log, size - 3);
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  auto state = store->Load();
  ASSERT_THAT(state, IsOk());
  ASSERT_EQ(state->directories_size(), 1);
  const auto& d = state->directories(0);
  std::set<std::string> keys;
  for (const auto& entry : d.entries()) keys.insert(entry.key());
  EXPECT_EQ(keys.size(), 99u);
  for (int i = 0; i < 99; ++i) {
    EXPECT_TRUE(keys.count(absl::StrCat("d/", i))) << i;
  }
  EXPECT_FALSE(keys.count("d/99"));
}

// Random bytes over a record in the middle of the log (its payload): the checksum catches it and
// the open fails, rather than serving the records around it.
TEST_F(StateStoreTest, RandomBytesInTheLog_DataLoss) {
  WriteHundredBatches();
  std::string log = Newest(".log");
  std::string bytes = ReadFile(log);
  size_t at = bytes.find("value-50");
  ASSERT_NE(at, std::string::npos);
  Scribble(log, at, 8, /*seed=*/50);
  auto store = StateStore::Open(dir_);
  absl::Status status = store.ok() ? (*store)->Load().status() : store.status();
  EXPECT_THAT(status, StatusIs(Code::kDataLoss, AllOf(HasSubstr("damaged"), HasSubstr(dir_))));
}

TEST_F(StateStoreTest, RandomBytesInTheManifest_DataLoss) {
  WriteHundredBatches();
  std::string manifest;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("MANIFEST-", 0) == 0) manifest = entry.path().string();
  }
  ASSERT_FALSE(manifest.empty());
  auto size = fs::file_size(manifest);
  Scribble(manifest, size / 2, 8, /*seed=*/7);
  EXPECT_THAT(StateStore::Open(dir_),
              StatusIs(Code::kDataLoss, AllOf(HasSubstr("damaged"), HasSubstr(dir_))));
}

TEST_F(StateStoreTest, RandomBytesInCurrent_DataLoss) {
  WriteHundredBatches();
  // In the middle of "MANIFEST-000002\n": CURRENT names a file that does not exist.
  Scribble((fs::path(dir_) / "CURRENT").string(), 4, 4, /*seed=*/3);
  EXPECT_THAT(StateStore::Open(dir_), StatusIs(Code::kDataLoss, HasSubstr("damaged")));
  // Without its newline.
  {
    std::ofstream current(fs::path(dir_) / "CURRENT", std::ios::binary | std::ios::trunc);
    current << "\x13\x37\xfe\xed";
  }
  EXPECT_THAT(StateStore::Open(dir_), StatusIs(Code::kDataLoss, HasSubstr("damaged")));
}

// A table (the log turned into a sorted file by a reopen) with random bytes: the open does not
// read it, the load does and fails rather than returning what it could read.
TEST_F(StateStoreTest, RandomBytesInATable_LoadDataLoss) {
  WriteHundredBatches();
  { ASSERT_NE(OpenOk(), nullptr); }  // the reopen compacts the log into a table
  std::string table = Newest(".ldb");
  auto size = fs::file_size(table);
  Scribble(table, size / 4, 8, /*seed=*/11);
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->Load(),
              StatusIs(Code::kDataLoss, AllOf(HasSubstr("damaged"), HasSubstr(dir_))));
}

TEST_F(StateStoreTest, StoreStatusLoadStatus_RoundTripCodeMessageAndPayloads) {
  absl::Status status = absl::AbortedError("barrier b failed");
  status.SetPayload("type.googleapis.com/muster.Payload", absl::Cord(std::string("\x01\x00x", 3)));
  status.SetPayload("other", absl::Cord("y"));
  proto::StoredStatus stored = StoreStatus(status);
  EXPECT_EQ(stored.code(), static_cast<int>(Code::kAborted));
  EXPECT_EQ(stored.message(), "barrier b failed");
  EXPECT_EQ(stored.payloads_size(), 2);
  // Through bytes, as the state dir keeps it.
  proto::StoredStatus parsed;
  ASSERT_TRUE(parsed.ParseFromString(stored.SerializeAsString()));
  absl::Status loaded = LoadStatus(parsed);
  EXPECT_EQ(loaded, status);
  auto payload = loaded.GetPayload("type.googleapis.com/muster.Payload");
  ASSERT_TRUE(payload.has_value());
  EXPECT_EQ(std::string(*payload), std::string("\x01\x00x", 3));

  EXPECT_THAT(LoadStatus(StoreStatus(absl::OkStatus())), IsOk());
  proto::StoredStatus bogus;
  bogus.set_code(1234);
  bogus.set_message("from the future");
  EXPECT_THAT(LoadStatus(bogus), StatusIs(Code::kUnknown, "from the future"));
}

}  // namespace
}  // namespace muster
