// Watches and limits of the key-value directory actor: event order and revisions, what a key
// or directory watch sees, stopping, watcher death; size limits end to end. Deterministic.
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/actors/kv/directory/kv_directory_actor.h"
#include "tests/actors/kv/kv_test_helpers.h"
#include "tests/testing/deterministic_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::AskStats;
using ::muster::testing::CasRequest;
using ::muster::testing::DeleteRequest;
using ::muster::testing::DeterministicTest;
using ::muster::testing::EventLog;
using ::muster::testing::IncrementRequest;
using ::muster::testing::InsertRequest;
using ::muster::testing::IsOk;
using ::muster::testing::KvStats;
using ::muster::testing::SpawnWatcher;
using ::muster::testing::StatusIs;
using ::muster::testing::StopWatchRequest;
using ::muster::testing::UpdateRequest;
using ::muster::testing::WatchRequest;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Kind = proto::KeyValueChangeEvent;

// "<kind> <key>=<value> @<revision> (<watched>)" for compact comparisons.
std::vector<std::string> Describe(const EventLog& log) {
  std::vector<std::string> lines;
  for (const auto& event : *log) {
    lines.push_back(absl::StrCat(Kind::Kind_Name(event.kind()), " ", event.key(), "=",
                                 event.value(), " @", event.revision(), " (", event.watched_key(),
                                 ")"));
  }
  return lines;
}

class KvDirectoryWatchTest : public DeterministicTest {
 protected:
  KvDirectoryActor Spawn(KvLimits limits = KvLimits()) {
    return Keep(SpawnKvDirectory(system_, "d", limits));
  }
  // Starts a watch of `key` by a fresh watcher; returns the watcher's log.
  EventLog Watch(const KvDirectoryActor& directory, const std::string& key) {
    auto log = std::make_shared<std::vector<proto::KeyValueChangeEvent>>();
    watcher_ = Keep(SpawnWatcher(system_, log));
    EXPECT_THAT(Call<proto::WatchKeyResponse>(directory, WatchRequest(key), watcher_), IsOk());
    return log;
  }
  template <class Response, class... Args>
  void Ok(const KvDirectoryActor& directory, Args... args) {
    ASSERT_THAT(Call<Response>(directory, args...), IsOk());
  }
  KvStats Stats(const KvDirectoryActor& directory) {
    auto stats = AskStats(system_, directory);
    Drain();
    return *stats;
  }

  KvWatcherActor watcher_;
};

TEST_F(KvDirectoryWatchTest, WatchDirectory_SeesItselfAndEverythingUnderInOrder) {
  auto directory = Spawn();
  EventLog log = Watch(directory, "d");
  Ok<proto::InsertKeyValueResponse>(directory, InsertRequest("d", "0"));
  Ok<proto::InsertKeyValueResponse>(directory, InsertRequest("d/a", "1"));
  Ok<proto::UpdateKeyValueResponse>(directory, UpdateRequest("d/a", "2"));
  Ok<proto::IncrementKeyValueResponse>(directory, IncrementRequest("d/b/c", 5));
  Ok<proto::DeleteKeyValueResponse>(directory, DeleteRequest("d/a", false));
  EXPECT_THAT(Describe(log),
              ElementsAre("INSERTED d=0 @1 (d)", "INSERTED d/a=1 @2 (d)", "UPDATED d/a=2 @3 (d)",
                          "INSERTED d/b/c=5 @4 (d)", "DELETED d/a= @5 (d)"));
}

TEST_F(KvDirectoryWatchTest, WatchKey_SeesOnlyThatKeyAndKeysUnderIt) {
  auto directory = Spawn();
  EventLog log = Watch(directory, "d/a");
  for (const char* key : {"d/ab", "d", "d/a0/x", "d/a", "d/b/a", "d/a/b"}) {
    Ok<proto::InsertKeyValueResponse>(directory, InsertRequest(key, "v"));
  }
  EXPECT_THAT(Describe(log), ElementsAre("INSERTED d/a=v @4 (d/a)", "INSERTED d/a/b=v @6 (d/a)"));
}

TEST_F(KvDirectoryWatchTest, WatchKey_ReplyCarriesCurrentRevision) {
  auto directory = Spawn();
  Ok<proto::InsertKeyValueResponse>(directory, InsertRequest("d/a", "1"));
  Ok<proto::InsertKeyValueResponse>(directory, InsertRequest("d/b", "1"));
  auto watcher = Keep(SpawnWatcher(system_, std::make_shared<std::vector<Kind>>()));
  auto reply = Call<proto::WatchKeyResponse>(directory, WatchRequest("d"), watcher);
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->revision(), 2);
}

TEST_F(KvDirectoryWatchTest, EveryMutation_BumpsRevisionStrictly) {
  auto directory = Spawn();
  EventLog log = Watch(directory, "d");
  Ok<proto::InsertKeyValueResponse>(directory, InsertRequest("d/a", "1"));
  Ok<proto::InsertKeyValueResponse>(directory, InsertRequest("d/a", "1", true));
  Ok<proto::CompareAndSwapResponse>(directory, CasRequest("d/a", "1", "2"));
  Ok<proto::CompareAndSwapResponse>(directory, CasRequest("d/a", "wrong", "3"));
  Ok<proto::IncrementKeyValueResponse>(directory, IncrementRequest("d/a", 1));
  Ok<proto::DeleteKeyValueResponse>(directory, DeleteRequest("d/a", true));
  std::vector<int64_t> revisions;
  for (const auto& event : *log) revisions.push_back(event.revision());
  EXPECT_THAT(revisions, ElementsAre(1, 2, 3, 4, 5));
  EXPECT_EQ(log->at(3).value(), "3");
}

TEST_F(KvDirectoryWatchTest, DeleteSubtree_OneDeletedEventPerKeyInKeyOrder) {
  auto directory = Spawn();
  for (const char* key : {"d/x/2", "d/x", "d/x/1"}) {
    Ok<proto::InsertKeyValueResponse>(directory, InsertRequest(key, "v"));
  }
  EventLog log = Watch(directory, "d/x");
  Ok<proto::DeleteKeyValueResponse>(directory, DeleteRequest("d/x", true));
  EXPECT_THAT(Describe(log), ElementsAre("DELETED d/x= @4 (d/x)", "DELETED d/x/1= @5 (d/x)",
                                         "DELETED d/x/2= @6 (d/x)"));
}

TEST_F(KvDirectoryWatchTest, TwoWatchesOfOneWatcher_EachNamesItsWatchedKey) {
  auto directory = Spawn();
  EventLog log = Watch(directory, "d");
  Ok<proto::WatchKeyResponse>(directory, WatchRequest("d/a"), watcher_);
  Ok<proto::InsertKeyValueResponse>(directory, InsertRequest("d/a", "1"));
  EXPECT_THAT(Describe(log), ElementsAre("INSERTED d/a=1 @1 (d)", "INSERTED d/a=1 @1 (d/a)"));
}

TEST_F(KvDirectoryWatchTest, SameWatchTwice_DeliversOnce) {
  auto directory = Spawn();
  EventLog log = Watch(directory, "d/a");
  Ok<proto::WatchKeyResponse>(directory, WatchRequest("d/a"), watcher_);
  Ok<proto::InsertKeyValueResponse>(directory, InsertRequest("d/a", "1"));
  EXPECT_EQ(log->size(), 1u);
}

TEST_F(KvDirectoryWatchTest, StopWatchKey_NoMoreEventsAndMonitorDropped) {
  auto directory = Spawn();
  EventLog log = Watch(directory, "d");
  Ok<proto::StopWatchKeyResponse>(directory, StopWatchRequest("d"), watcher_);
  Ok<proto::InsertKeyValueResponse>(directory, InsertRequest("d/a", "1"));
  EXPECT_TRUE(log->empty());
  KvStats stats = Stats(directory);
  EXPECT_EQ(stats.watches, 0);
  EXPECT_EQ(stats.peers, 0);
}

TEST_F(KvDirectoryWatchTest, StopWatchKey_NoSuchWatch_Ok) {
  auto directory = Spawn();
  auto watcher = Keep(SpawnWatcher(system_, std::make_shared<std::vector<Kind>>()));
  EXPECT_THAT(Call<proto::StopWatchKeyResponse>(directory, StopWatchRequest("d/a"), watcher),
              IsOk());
}

TEST_F(KvDirectoryWatchTest, WatcherDies_WatchDropped) {
  auto directory = Spawn();
  auto watcher = SpawnWatcher(system_, std::make_shared<std::vector<Kind>>());
  Ok<proto::WatchKeyResponse>(directory, WatchRequest("d"), watcher);
  EXPECT_EQ(Stats(directory).watches, 1);
  caf::anon_send_exit(watcher, caf::exit_reason::user_shutdown);
  Drain();
  KvStats stats = Stats(directory);
  EXPECT_EQ(stats.watches, 0);
  EXPECT_EQ(stats.peers, 0);
  Ok<proto::InsertKeyValueResponse>(directory, InsertRequest("d/a", "1"));
}

TEST_F(KvDirectoryWatchTest, WatchRoot_InvalidArgument) {
  auto directory = Spawn();
  auto watcher = Keep(SpawnWatcher(system_, std::make_shared<std::vector<Kind>>()));
  EXPECT_THAT(Call<proto::WatchKeyResponse>(directory, WatchRequest(""), watcher),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("watch a key or a directory, not the root")));
}

TEST_F(KvDirectoryWatchTest, WatchWithoutWatcher_InvalidArgument) {
  auto directory = Spawn();
  EXPECT_THAT(Call<proto::WatchKeyResponse>(directory, WatchRequest("d"), KvWatcherActor()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no watcher")));
}

TEST_F(KvDirectoryWatchTest, FullDirectory_NewKeyResourceExhausted) {
  KvLimits limits;
  limits.max_keys_per_directory = 2;
  auto directory = Spawn(limits);
  Ok<proto::InsertKeyValueResponse>(directory, InsertRequest("d/a", "1"));
  Ok<proto::InsertKeyValueResponse>(directory, InsertRequest("d/b", "1"));
  auto reply = Call<proto::InsertKeyValueResponse>(directory, InsertRequest("d/c", "1"));
  EXPECT_THAT(reply,
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("d/c"), HasSubstr("directory d"), HasSubstr("limit of 2"))));
  EXPECT_TRUE(GetCoordinationError(reply.status()).has_value());
  EXPECT_THAT(Call<proto::CompareAndSwapResponse>(directory, CasRequest("d/c", "", "1", true)),
              StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST_F(KvDirectoryWatchTest, ValueOverLimit_ResourceExhausted) {
  KvLimits limits;
  limits.max_value_bytes = 4;
  auto directory = Spawn(limits);
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(directory, InsertRequest("d/a", "12345")),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("d/a"), HasSubstr("5 bytes"), HasSubstr("limit of 4"))));
}

TEST_F(KvDirectoryWatchTest, KeyOverLimit_InvalidArgument) {
  KvLimits limits;
  limits.max_key_bytes = 4;
  auto directory = Spawn(limits);
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(directory, InsertRequest("d/abc", "1")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("d/abc"), HasSubstr("5 bytes"), HasSubstr("limit of 4"))));
}

}  // namespace
}  // namespace muster
