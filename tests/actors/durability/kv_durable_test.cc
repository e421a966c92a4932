// A key-value directory's durable side without actors (KvDurable): the records each change
// writes, the bounded history and what a resumed watch replays from it, the replies kept per
// request id (bounded per client and in clients), and what a restarted leader restores.
#include "muster/actors/durability/kv_durable.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/actors/durability/state_store.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Code = absl::StatusCode;
using Kind = proto::KeyValueChangeEvent;

proto::KeyValueEntry Entry(const std::string& key, const std::string& value) {
  proto::KeyValueEntry entry;
  entry.set_key(key);
  entry.set_value(value);
  return entry;
}

proto::RequestId Id(uint64_t client, uint64_t seq, uint64_t answered_below = 0) {
  proto::RequestId id;
  id.set_client(client);
  id.set_seq(seq);
  id.set_answered_below(answered_below);
  return id;
}

// "put <key>" / "del <key>" per op, in order.
std::vector<std::string> Ops(const StateBatch& batch) {
  std::vector<std::string> ops;
  for (const auto& [key, value] : batch.ops)
    ops.push_back(absl::StrCat(value ? "put " : "del ", key));
  return ops;
}

// The value the batch puts under `key` (the last put), if any.
std::optional<std::string> PutOf(const StateBatch& batch, const std::string& key) {
  std::optional<std::string> found;
  for (const auto& [k, value] : batch.ops) {
    if (k == key) found = value;
  }
  return found;
}

std::vector<int64_t> Revisions(const std::vector<proto::KeyValueChangeEvent>& events) {
  std::vector<int64_t> revisions;
  for (const auto& event : events) revisions.push_back(event.revision());
  return revisions;
}

class KvDurableTest : public ::testing::Test {
 protected:
  // Inserts (overwriting) key=value and records the change; returns the batch.
  StateBatch Put(const std::string& key, const std::string& value, const KvOwner* owner = nullptr) {
    KvStore::Changes changes;
    EXPECT_THAT(store_.Insert(Entry(key, value), /*allow_overwrite=*/true, changes, owner), IsOk());
    StateBatch batch;
    durable_.Record(store_, changes, batch);
    return batch;
  }

  // The directory is watched (it keeps history) unless a test says otherwise.
  void SetUp() override {
    StateBatch marker;
    durable_.StartHistory(store_, marker);
  }

  KvStore store_{"d", KvLimits()};
  KvDurable durable_;
};

TEST_F(KvDurableTest, WithoutWriter_NotEnabledAndGateIdle) {
  EXPECT_FALSE(durable_.enabled());
  EXPECT_TRUE(durable_.gate().idle());
  bool ran = false;
  durable_.gate().After([&](const absl::Status& status) {
    EXPECT_THAT(status, IsOk());
    ran = true;
  });
  EXPECT_TRUE(ran);
}

TEST_F(KvDurableTest, Record_UnwatchedDirectory_PutsOnlyTheKey) {
  KvStore store("u", KvLimits());
  KvDurable durable;
  KvStore::Changes changes;
  ASSERT_THAT(store.Insert(Entry("u/x", "1"), false, changes), IsOk());
  StateBatch batch;
  durable.Record(store, changes, batch);
  EXPECT_THAT(Ops(batch), ElementsAre("put k/u/x"));
  EXPECT_FALSE(durable.keeps_history());
}

TEST_F(KvDurableTest, StartHistory_PutsTheWatchedMarkerWithTheRevisionOnce) {
  KvStore store("u", KvLimits());
  KvDurable durable;
  KvStore::Changes changes;
  ASSERT_THAT(store.Insert(Entry("u/x", "1"), false, changes), IsOk());
  StateBatch batch;
  durable.StartHistory(store, batch);
  EXPECT_THAT(Ops(batch), ElementsAre("put r/u"));
  proto::KvRevisionRecord marker;
  ASSERT_TRUE(marker.ParseFromString(*PutOf(batch, "r/u")));
  EXPECT_EQ(marker.revision(), 1);
  EXPECT_TRUE(marker.watched());
  StateBatch again;
  durable.StartHistory(store, again);
  EXPECT_TRUE(again.empty());
}

TEST_F(KvDurableTest, Record_InsertPutsKeyAndHistory) {
  StateBatch batch = Put("d/x", "1");
  EXPECT_THAT(Ops(batch), ElementsAre("put k/d/x", "put h/d/0000000000000001"));
  proto::KvRecord record;
  ASSERT_TRUE(record.ParseFromString(*PutOf(batch, "k/d/x")));
  EXPECT_EQ(record.value(), "1");
  EXPECT_EQ(record.owner_task(), "");
  EXPECT_EQ(record.owner_incarnation(), 0u);
  proto::KvHistoryRecord history;
  ASSERT_TRUE(history.ParseFromString(*PutOf(batch, "h/d/0000000000000001")));
  EXPECT_EQ(history.event().kind(), Kind::INSERTED);
  EXPECT_EQ(history.event().key(), "d/x");
  EXPECT_EQ(history.event().value(), "1");
  EXPECT_EQ(history.event().revision(), 1);
}

TEST_F(KvDurableTest, Record_EphemeralKeyKeepsItsOwner) {
  KvOwner owner{"/job:worker/task:0", 100};
  StateBatch batch = Put("d/e", "v", &owner);
  proto::KvRecord record;
  ASSERT_TRUE(record.ParseFromString(*PutOf(batch, "k/d/e")));
  EXPECT_EQ(record.owner_task(), "/job:worker/task:0");
  EXPECT_EQ(record.owner_incarnation(), 100u);
}

TEST_F(KvDurableTest, Record_DeleteOfASubtree_DeletesEachKeyWithAHistoryEventEach) {
  Put("d/a/1", "x");
  Put("d/a/2", "y");
  KvStore::Changes changes;
  ASSERT_THAT(store_.Delete("d/a", /*is_directory=*/true, changes), IsOk());
  StateBatch batch;
  durable_.Record(store_, changes, batch);
  EXPECT_THAT(Ops(batch), ElementsAre("del k/d/a/1", "put h/d/0000000000000003", "del k/d/a/2",
                                      "put h/d/0000000000000004"));
  proto::KvHistoryRecord history;
  ASSERT_TRUE(history.ParseFromString(*PutOf(batch, "h/d/0000000000000004")));
  EXPECT_EQ(history.event().kind(), Kind::DELETED);
  EXPECT_EQ(history.event().key(), "d/a/2");
}

TEST_F(KvDurableTest, Record_NoChanges_NothingWritten) {
  StateBatch batch;
  durable_.Record(store_, {}, batch);
  EXPECT_TRUE(batch.empty());
}

TEST_F(KvDurableTest, History_BoundedAtKHistory_EvictedRevisionsDeleted) {
  const int64_t total = static_cast<int64_t>(KvDurable::kHistory) + 5;
  StateBatch last;
  for (int64_t i = 1; i <= total; ++i) last = Put("d/k", absl::StrCat(i));
  // The last change evicts revision total - kHistory (= 5).
  EXPECT_THAT(Ops(last),
              ElementsAre("put k/d/k", absl::StrCat("put ", KvHistoryStateKey("d", total)),
                          absl::StrCat("del ", KvHistoryStateKey("d", 5))));
  // Kept: revisions 6..total. A watch from 5 misses nothing; from 4 it would miss revision 5.
  auto from5 = durable_.ChangesAfter(5, total);
  ASSERT_THAT(from5, IsOk());
  EXPECT_EQ(from5->size(), KvDurable::kHistory);
  EXPECT_EQ(from5->front().revision(), 6);
  EXPECT_EQ(from5->back().revision(), total);
  EXPECT_THAT(
      durable_.ChangesAfter(4, total),
      StatusIs(Code::kOutOfRange, AllOf(HasSubstr("revision 4"), HasSubstr("oldest kept: 6"),
                                        HasSubstr(absl::StrCat("last ", KvDurable::kHistory)))));
}

TEST_F(KvDurableTest, ChangesAfter_ExactlyTheEventsAfterTheRevision) {
  Put("d/a", "1");
  Put("d/b", "2");
  Put("d/a", "3");
  auto changes = durable_.ChangesAfter(1, store_.revision());
  ASSERT_THAT(changes, IsOk());
  ASSERT_EQ(changes->size(), 2u);
  EXPECT_EQ((*changes)[0].key(), "d/b");
  EXPECT_EQ((*changes)[0].kind(), Kind::INSERTED);
  EXPECT_EQ((*changes)[0].revision(), 2);
  EXPECT_EQ((*changes)[1].key(), "d/a");
  EXPECT_EQ((*changes)[1].kind(), Kind::UPDATED);
  EXPECT_EQ((*changes)[1].value(), "3");
  EXPECT_EQ((*changes)[1].revision(), 3);
  EXPECT_THAT(Revisions(*durable_.ChangesAfter(2, 3)), ElementsAre(3));
  // Up to date: nothing to replay.
  auto none = durable_.ChangesAfter(3, 3);
  ASSERT_THAT(none, IsOk());
  EXPECT_TRUE(none->empty());
}

TEST_F(KvDurableTest, ChangesAfter_AheadOfTheDirectory_OutOfRange) {
  Put("d/a", "1");
  EXPECT_THAT(durable_.ChangesAfter(2, 1),
              StatusIs(Code::kOutOfRange, AllOf(HasSubstr("revision 2"), HasSubstr("ahead"))));
}

TEST_F(KvDurableTest, ChangesAfter_NoHistoryBehindTheRevision_OutOfRange) {
  // A directory with revision 7 but no history (e.g. restored without it).
  EXPECT_THAT(durable_.ChangesAfter(3, 7),
              StatusIs(Code::kOutOfRange, HasSubstr("oldest kept: 7")));
}

TEST_F(KvDurableTest, RememberReply_PutsTheRecordAndFindsItById) {
  EXPECT_EQ(durable_.FindReply(Id(5, 1)), nullptr);
  proto::IncrementKeyValueResponse response;
  response.mutable_kv()->set_key("d/n");
  response.mutable_kv()->set_value("1");
  StateBatch batch;
  durable_.RememberReply("d", Id(5, 1),
                         StoreReply(absl::StatusOr<proto::IncrementKeyValueResponse>(response)),
                         &batch);
  EXPECT_THAT(Ops(batch), ElementsAre("put d/d/0000000000000005/0000000000000001"));
  proto::StoredReply stored;
  ASSERT_TRUE(stored.ParseFromString(*PutOf(batch, KvReplyStateKey("d", 5, 1))));
  EXPECT_EQ(stored.status().code(), 0);
  const proto::StoredReply* found = durable_.FindReply(Id(5, 1));
  ASSERT_NE(found, nullptr);
  auto replayed = LoadReply<proto::IncrementKeyValueResponse>(*found);
  ASSERT_THAT(replayed, IsOk());
  EXPECT_EQ(replayed->kv().value(), "1");
  EXPECT_EQ(durable_.FindReply(Id(5, 2)), nullptr);
  EXPECT_EQ(durable_.FindReply(Id(6, 1)), nullptr);
}

TEST_F(KvDurableTest, RememberReply_ErrorsAreRepliedToo) {
  StateBatch batch;
  durable_.RememberReply(
      "d", Id(5, 1),
      StoreReply(absl::StatusOr<proto::InsertKeyValueResponse>(absl::AlreadyExistsError("d/x"))),
      &batch);
  const proto::StoredReply* found = durable_.FindReply(Id(5, 1));
  ASSERT_NE(found, nullptr);
  EXPECT_THAT(LoadReply<proto::InsertKeyValueResponse>(*found),
              StatusIs(Code::kAlreadyExists, "d/x"));
}

TEST_F(KvDurableTest, LoadReply_ResponseThatDoesNotParse_Internal) {
  proto::StoredReply reply;
  reply.set_response("\xff\xff\xff");
  EXPECT_THAT(LoadReply<proto::IncrementKeyValueResponse>(reply),
              StatusIs(Code::kInternal, HasSubstr("does not parse")));
}

TEST_F(KvDurableTest, RememberReply_KeepsKRepliesPerClientPerClient_OldestSeqDeleted) {
  const uint64_t n = KvDurable::kRepliesPerClient;
  StateBatch other;
  durable_.RememberReply("d", Id(9, 1), proto::StoredReply(), &other);
  StateBatch batch;
  for (uint64_t seq = 1; seq <= n; ++seq) {
    batch = StateBatch();
    durable_.RememberReply("d", Id(5, seq), proto::StoredReply(), &batch);
  }
  EXPECT_THAT(Ops(batch), ElementsAre(absl::StrCat("put ", KvReplyStateKey("d", 5, n))));
  batch = StateBatch();
  durable_.RememberReply("d", Id(5, n + 1), proto::StoredReply(), &batch);
  // The delete first, the reply in a unit of its own with the change the caller adds next.
  EXPECT_THAT(Ops(batch), ElementsAre(absl::StrCat("del ", KvReplyStateKey("d", 5, 1)),
                                      absl::StrCat("put ", KvReplyStateKey("d", 5, n + 1))));
  EXPECT_THAT(batch.unit_ends, ElementsAre(1));
  EXPECT_EQ(durable_.FindReply(Id(5, 1)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(5, 2)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(5, n + 1)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(9, 1)), nullptr);  // another client keeps its own
}

// A client's answered_below lets the leader forget the replies below it, in memory at once; their
// records stay (no write of their own) until the client has more than kAnsweredRecordsPerClient
// of them. A copy of a forgotten write is known as a late one.
TEST_F(KvDurableTest, RememberReply_AnsweredBelow_ForgetsEarlierRepliesKeepsTheirRecords) {
  StateBatch batch;
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    durable_.RememberReply("d", Id(5, seq, /*answered_below=*/1), proto::StoredReply(), &batch);
  }
  durable_.RememberReply("d", Id(9, 1), proto::StoredReply(), &batch);
  EXPECT_EQ(durable_.kept_replies(), 4);
  batch = StateBatch();
  durable_.RememberReply("d", Id(5, 4, /*answered_below=*/3), proto::StoredReply(), &batch);
  EXPECT_THAT(Ops(batch), ElementsAre(absl::StrCat("put ", KvReplyStateKey("d", 5, 4))));
  EXPECT_EQ(durable_.FindReply(Id(5, 1)), nullptr);
  EXPECT_EQ(durable_.FindReply(Id(5, 2)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(5, 3)), nullptr);  // still in flight
  EXPECT_NE(durable_.FindReply(Id(5, 4)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(9, 1)), nullptr);  // another client's
  EXPECT_EQ(durable_.kept_replies(), 3);
  // A copy of 1 or 2 arriving now is a late one; 3 and later are not, nor other clients' writes.
  EXPECT_TRUE(durable_.AnsweredBefore(Id(5, 1)));
  EXPECT_TRUE(durable_.AnsweredBefore(Id(5, 2)));
  EXPECT_FALSE(durable_.AnsweredBefore(Id(5, 3)));
  EXPECT_FALSE(durable_.AnsweredBefore(Id(5, 9)));
  EXPECT_FALSE(durable_.AnsweredBefore(Id(9, 1)));
  EXPECT_FALSE(durable_.AnsweredBefore(Id(6, 1)));
  // A bound beyond the write's own number keeps that write's reply.
  durable_.RememberReply("d", Id(5, 5, /*answered_below=*/99), proto::StoredReply(), &batch);
  EXPECT_EQ(durable_.FindReply(Id(5, 4)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(5, 5)), nullptr);
  EXPECT_EQ(durable_.kept_replies(), 2);
  EXPECT_TRUE(durable_.AnsweredBefore(Id(5, 4)));
  EXPECT_FALSE(durable_.AnsweredBefore(Id(5, 5)));
  // A bound lower than one sent before (a re-sent write's, as first sent) lowers nothing.
  durable_.RememberReply("d", Id(5, 6, /*answered_below=*/2), proto::StoredReply(), &batch);
  EXPECT_TRUE(durable_.AnsweredBefore(Id(5, 4)));
  EXPECT_NE(durable_.FindReply(Id(5, 5)), nullptr);
  // The records of forgotten replies stay until there are more than kAnsweredRecordsPerClient:
  // the write that makes one more deletes the oldest, seq 1, with its own put.
  const uint64_t last_without_delete = KvDurable::kAnsweredRecordsPerClient + 1;
  for (uint64_t seq = 7; seq <= last_without_delete; ++seq) {
    batch = StateBatch();
    durable_.RememberReply("d", Id(5, seq, seq), proto::StoredReply(), &batch);
    EXPECT_THAT(Ops(batch), ElementsAre(absl::StrCat("put ", KvReplyStateKey("d", 5, seq))));
  }
  batch = StateBatch();
  durable_.RememberReply("d", Id(5, last_without_delete + 1, last_without_delete + 1),
                         proto::StoredReply(), &batch);
  EXPECT_THAT(Ops(batch),
              ElementsAre(absl::StrCat("del ", KvReplyStateKey("d", 5, 1)),
                          absl::StrCat("put ", KvReplyStateKey("d", 5, last_without_delete + 1))));
  EXPECT_EQ(durable_.kept_replies(), 2);  // client 5's last and client 9's
}

// A forgotten reply's record is deleted oldest first, but never the record of a reply still kept
// (a write in flight, made before writes numbered below it: direct calls of several threads): it
// goes to the back, and the forgotten ones behind it are deleted.
TEST_F(KvDurableTest, RememberReply_RecordOfAWriteInFlightStaysWhateverIsForgottenAfterIt) {
  const uint64_t slack = KvDurable::kAnsweredRecordsPerClient;
  StateBatch batch;
  durable_.RememberReply("d", Id(5, 100, 1), proto::StoredReply(), &batch);
  for (uint64_t seq = 1; seq < 100; ++seq) {
    durable_.RememberReply("d", Id(5, seq, 1), proto::StoredReply(), &batch);
  }
  // 1-99 answered, 100 not: 99 forgotten records behind 100's, the oldest. 100's stays; 1 to
  // 99 - slack go.
  batch = StateBatch();
  durable_.RememberReply("d", Id(5, 101, 100), proto::StoredReply(), &batch);
  std::vector<std::string> expected;
  for (uint64_t seq = 1; seq <= 99 - slack; ++seq) {
    expected.push_back(absl::StrCat("del ", KvReplyStateKey("d", 5, seq)));
  }
  expected.push_back(absl::StrCat("put ", KvReplyStateKey("d", 5, 101)));
  EXPECT_THAT(Ops(batch), ::testing::ElementsAreArray(expected));
  EXPECT_NE(durable_.FindReply(Id(5, 100)), nullptr);
  EXPECT_EQ(durable_.kept_replies(), 2);
  // 100 and 101 answered: two more forgotten; the oldest two go (100's is now behind 101's).
  batch = StateBatch();
  durable_.RememberReply("d", Id(5, 102, 102), proto::StoredReply(), &batch);
  EXPECT_THAT(Ops(batch), ElementsAre(absl::StrCat("del ", KvReplyStateKey("d", 5, 100 - slack)),
                                      absl::StrCat("del ", KvReplyStateKey("d", 5, 101 - slack)),
                                      absl::StrCat("put ", KvReplyStateKey("d", 5, 102))));
  EXPECT_EQ(durable_.kept_replies(), 1);
}

// Without a state dir nothing is recorded, and a client keeps its kRepliesPerClient highest.
TEST_F(KvDurableTest, RememberReply_WithoutRecords_KeepsRepliesOnly) {
  const uint64_t n = KvDurable::kRepliesPerClient;
  durable_.RememberReply("d", Id(5, n + 1), proto::StoredReply(), /*records=*/nullptr);  // first
  for (uint64_t seq = 1; seq <= n; ++seq) {
    durable_.RememberReply("d", Id(5, seq), proto::StoredReply(), /*records=*/nullptr);
  }
  EXPECT_EQ(durable_.kept_replies(), static_cast<int64_t>(n));
  EXPECT_EQ(durable_.FindReply(Id(5, 1)), nullptr);  // the lowest, not the one written first
  EXPECT_NE(durable_.FindReply(Id(5, 2)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(5, n + 1)), nullptr);
  durable_.RememberReply("d", Id(5, 2000, 1500), proto::StoredReply(), nullptr);
  EXPECT_EQ(durable_.kept_replies(), 1);
  EXPECT_TRUE(durable_.AnsweredBefore(Id(5, 1499)));
  EXPECT_NE(durable_.FindReply(Id(5, 2000)), nullptr);
}

// Beyond kReplies kept in a directory, the clients that wrote least recently are forgotten whole,
// not the newest replies of anyone: what a client still writing has in flight stays.
TEST_F(KvDurableTest, RememberReply_KeepsKReplies_TheLeastRecentlyWritingClientForgotten) {
  const uint64_t full = KvDurable::kReplies / KvDurable::kRepliesPerClient;  // clients, each full
  for (uint64_t client = 1; client <= full; ++client) {
    for (uint64_t seq = 1; seq <= KvDurable::kRepliesPerClient; ++seq) {
      durable_.RememberReply("d", Id(client, seq), proto::StoredReply(), nullptr);
    }
  }
  durable_.RememberReply("d", Id(1, KvDurable::kRepliesPerClient + 1), proto::StoredReply(),
                         nullptr);  // client 1 writes on (and drops its own oldest)
  EXPECT_EQ(durable_.kept_replies(), static_cast<int64_t>(KvDurable::kReplies));
  durable_.RememberReply("d", Id(full + 1, 1), proto::StoredReply(), nullptr);
  EXPECT_EQ(durable_.FindReply(Id(2, KvDurable::kRepliesPerClient)), nullptr);  // forgotten whole
  EXPECT_NE(durable_.FindReply(Id(1, KvDurable::kRepliesPerClient + 1)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(3, 1)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(full + 1, 1)), nullptr);
  EXPECT_EQ(durable_.kept_replies(),
            static_cast<int64_t>(KvDurable::kReplies - KvDurable::kRepliesPerClient + 1));
}

// Beyond kClients the client that wrote least recently is forgotten, not the one that wrote
// first: a client that writes on keeps its replies however many clients come after it.
TEST_F(KvDurableTest, RememberReply_KeepsKClients_TheLeastRecentlyWritingForgotten) {
  StateBatch batch;
  durable_.RememberReply("d", Id(1, 1), proto::StoredReply(), &batch);
  durable_.RememberReply("d", Id(2, 1), proto::StoredReply(), &batch);
  durable_.RememberReply("d", Id(2, 2), proto::StoredReply(), &batch);
  for (uint64_t client = 3; client <= KvDurable::kClients; ++client) {
    durable_.RememberReply("d", Id(client, 1), proto::StoredReply(), &batch);
  }
  durable_.RememberReply("d", Id(1, 2), proto::StoredReply(), &batch);  // client 1 writes on
  EXPECT_NE(durable_.FindReply(Id(2, 1)), nullptr);
  batch = StateBatch();
  const uint64_t newcomer = KvDurable::kClients + 1;
  durable_.RememberReply("d", Id(newcomer, 1), proto::StoredReply(), &batch);
  EXPECT_THAT(Ops(batch), ElementsAre(absl::StrCat("del ", KvReplyStateKey("d", 2, 1)),
                                      absl::StrCat("del ", KvReplyStateKey("d", 2, 2)),
                                      absl::StrCat("put ", KvReplyStateKey("d", newcomer, 1))));
  EXPECT_EQ(durable_.FindReply(Id(2, 1)), nullptr);
  EXPECT_EQ(durable_.FindReply(Id(2, 2)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(1, 1)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(1, 2)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(3, 1)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(newcomer, 1)), nullptr);
}

TEST_F(KvDurableTest, Restore_LoadsKeysOwnersRevisionHistoryAndReplies) {
  proto::RecoveredKvDirectory recovered;
  recovered.set_directory("d");
  recovered.set_revision(3);  // the marker's; the newest change (5) wins
  recovered.set_watched(true);
  *recovered.add_entries() = Entry("d/e", "eph");
  proto::KvRecord* eph = recovered.add_records();
  eph->set_owner_task("/job:worker/task:0");
  eph->set_owner_incarnation(100);
  *recovered.add_entries() = Entry("d/x", "1");
  recovered.add_records();
  for (int64_t revision : {4, 5}) {
    proto::KeyValueChangeEvent* event = recovered.add_history();
    event->set_kind(Kind::UPDATED);
    event->set_key("d/x");
    event->set_value(absl::StrCat(revision));
    event->set_revision(revision);
  }
  auto* reply = recovered.add_replies();
  reply->set_client(5);
  reply->set_seq(1);
  reply->mutable_reply()->set_response("r");

  EXPECT_EQ(durable_.Restore(recovered, store_), 0);
  EXPECT_EQ(store_.revision(), 5);  // restoring keys records no change
  ASSERT_NE(store_.Find("d/x"), nullptr);
  EXPECT_EQ(*store_.Find("d/x"), "1");
  EXPECT_EQ(store_.OwnerOf("d/x"), nullptr);
  ASSERT_NE(store_.OwnerOf("d/e"), nullptr);
  EXPECT_EQ(*store_.OwnerOf("d/e"), (KvOwner{"/job:worker/task:0", 100}));
  const proto::StoredReply* found = durable_.FindReply(Id(5, 1));
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->response(), "r");
  EXPECT_THAT(Revisions(*durable_.ChangesAfter(3, 5)), ElementsAre(4, 5));
  EXPECT_THAT(durable_.ChangesAfter(2, 5), StatusIs(Code::kOutOfRange));
  // The next change continues the revisions and the history.
  StateBatch batch = Put("d/y", "2");
  EXPECT_EQ(store_.revision(), 6);
  EXPECT_TRUE(PutOf(batch, KvHistoryStateKey("d", 6)).has_value());
  EXPECT_THAT(Revisions(*durable_.ChangesAfter(4, 6)), ElementsAre(5, 6));
  // The restored reply counts among the client's records: forgotten once the client says it
  // was answered, its record deleted once the client has more than kAnsweredRecordsPerClient
  // records of forgotten replies.
  EXPECT_EQ(durable_.kept_replies(), 1);
  for (uint64_t seq = 2; seq <= KvDurable::kAnsweredRecordsPerClient + 2; ++seq) {
    batch = StateBatch();
    durable_.RememberReply("d", Id(5, seq, seq), proto::StoredReply(), &batch);
  }
  EXPECT_EQ(durable_.FindReply(Id(5, 1)), nullptr);
  EXPECT_EQ(durable_.kept_replies(), 1);
  EXPECT_THAT(Ops(batch), Contains(absl::StrCat("del ", KvReplyStateKey("d", 5, 1))));
}

// A restarted leader loads every record, those of answered replies too (a client's
// answered_below is not recorded): they do not count toward kReplies until the client writes
// again, so a restart past that bound forgets no client that will re-send its writes.
TEST_F(KvDurableTest, Restore_PastKReplies_ForgetsNoRestoredClientUntilItWrites) {
  const uint64_t per_client = KvDurable::kAnsweredRecordsPerClient + 1;  // 64 answered, 1 not
  const uint64_t clients = KvDurable::kReplies / per_client + 100;
  proto::RecoveredKvDirectory recovered;
  recovered.set_directory("d");
  for (uint64_t client = 1; client <= clients; ++client) {
    for (uint64_t seq = 1; seq <= per_client; ++seq) {
      auto* reply = recovered.add_replies();
      reply->set_client(client);
      reply->set_seq(seq);
    }
  }
  durable_.Restore(recovered, store_);
  EXPECT_EQ(durable_.kept_replies(), static_cast<int64_t>(clients * per_client));
  StateBatch batch;
  durable_.RememberReply("d", Id(clients + 1, 1, 1), proto::StoredReply(), &batch);
  EXPECT_NE(durable_.FindReply(Id(1, per_client)), nullptr);  // the first restored
  // Client 1 re-sends its write in flight (answered from its reply), then writes on: its
  // answered replies are forgotten and the rest counts.
  durable_.RememberReply("d", Id(1, per_client + 1, per_client), proto::StoredReply(), &batch);
  EXPECT_EQ(durable_.FindReply(Id(1, 1)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(1, per_client)), nullptr);
  EXPECT_NE(durable_.FindReply(Id(2, per_client)), nullptr);
  EXPECT_EQ(durable_.kept_replies(), static_cast<int64_t>((clients - 1) * per_client + 2 + 1));
}

TEST_F(KvDurableTest, Restore_KeysOverTodaysLimitsSkippedAndCounted) {
  KvLimits limits;
  limits.max_value_bytes = 4;
  KvStore store("d", limits);
  proto::RecoveredKvDirectory recovered;
  recovered.set_directory("d");
  recovered.set_revision(2);
  *recovered.add_entries() = Entry("d/big", "too large");
  recovered.add_records();
  *recovered.add_entries() = Entry("d/ok", "1");
  recovered.add_records();
  EXPECT_EQ(durable_.Restore(recovered, store), 1);
  EXPECT_EQ(store.Find("d/big"), nullptr);
  ASSERT_NE(store.Find("d/ok"), nullptr);
  EXPECT_EQ(store.revision(), 2);
}

}  // namespace
}  // namespace muster
