// The key-value directory actor: values, blocking gets (deadlines, withdrawal, requester
// death), increments, compare-and-swap, listings and deletes. Deterministic, simulated time.
#include "muster/actors/kv/directory/kv_directory_actor.h"

#include <chrono>
#include <limits>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/actors/kv/kv_test_helpers.h"
#include "tests/testing/deterministic_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using namespace std::chrono_literals;
using ::muster::testing::AskStats;
using ::muster::testing::CasRequest;
using ::muster::testing::DeleteRequest;
using ::muster::testing::DeterministicTest;
using ::muster::testing::DirRequest;
using ::muster::testing::GetReply;
using ::muster::testing::GetRequest;
using ::muster::testing::IncrementRequest;
using ::muster::testing::InsertRequest;
using ::muster::testing::IsOk;
using ::muster::testing::Keys;
using ::muster::testing::KvStats;
using ::muster::testing::SpawnGetter;
using ::muster::testing::StatusIs;
using ::muster::testing::TryGetRequest;
using ::muster::testing::UpdateRequest;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class KvDirectoryTest : public DeterministicTest {
 protected:
  KvDirectoryActor Spawn(const std::string& directory = "d", KvLimits limits = KvLimits()) {
    return Keep(SpawnKvDirectory(system_, directory, limits));
  }
  void Insert(const KvDirectoryActor& directory, const std::string& key, const std::string& value) {
    ASSERT_THAT(Call<proto::InsertKeyValueResponse>(directory, InsertRequest(key, value)), IsOk());
  }
  KvStats Stats(const KvDirectoryActor& directory) {
    auto stats = AskStats(system_, directory);
    Drain();
    return *stats;
  }
};

TEST_F(KvDirectoryTest, Insert_ThenTryGet_ReturnsValue) {
  auto directory = Spawn();
  Insert(directory, "d/a", "1");
  auto reply = Call<proto::TryGetKeyValueResponse>(directory, TryGetRequest("d/a"));
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->kv().key(), "d/a");
  EXPECT_EQ(reply->kv().value(), "1");
}

TEST_F(KvDirectoryTest, Insert_Duplicate_AlreadyExistsWithoutPayload) {
  auto directory = Spawn();
  Insert(directory, "d/a", "1");
  auto reply = Call<proto::InsertKeyValueResponse>(directory, InsertRequest("d/a", "2"));
  EXPECT_THAT(reply, StatusIs(absl::StatusCode::kAlreadyExists,
                              AllOf(HasSubstr("key d/a already exists"),
                                    HasSubstr("allow_overwrite"), HasSubstr("UpdateKeyValue"))));
  EXPECT_FALSE(GetCoordinationError(reply.status()).has_value());
}

TEST_F(KvDirectoryTest, Insert_AllowOverwrite_Replaces) {
  auto directory = Spawn();
  Insert(directory, "d/a", "1");
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(directory, InsertRequest("d/a", "2", true)),
              IsOk());
  EXPECT_EQ(Call<proto::TryGetKeyValueResponse>(directory, TryGetRequest("d/a"))->kv().value(),
            "2");
}

TEST_F(KvDirectoryTest, Insert_KeyOfAnotherDirectory_InvalidArgument) {
  auto directory = Spawn();
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(directory, InsertRequest("e/a", "1")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("directory d")));
}

TEST_F(KvDirectoryTest, Update_AbsentKey_NotFoundWithPayload) {
  auto directory = Spawn();
  auto reply = Call<proto::UpdateKeyValueResponse>(directory, UpdateRequest("d/a", "1"));
  EXPECT_THAT(reply, StatusIs(absl::StatusCode::kNotFound, HasSubstr("d/a")));
  EXPECT_TRUE(GetCoordinationError(reply.status()).has_value());
}

TEST_F(KvDirectoryTest, TryGet_AbsentKey_NotFoundConfigKeyWithPayload) {
  auto directory = Spawn();
  auto reply = Call<proto::TryGetKeyValueResponse>(directory, TryGetRequest("d/a"));
  EXPECT_THAT(reply, StatusIs(absl::StatusCode::kNotFound, "Config key d/a not found."));
  EXPECT_TRUE(GetCoordinationError(reply.status()).has_value());
}

TEST_F(KvDirectoryTest, GetKeyValue_PresentKey_AnswersAtOnce) {
  auto directory = Spawn();
  Insert(directory, "d/a", "1");
  auto reply = Call<proto::GetKeyValueResponse>(directory, GetRequest("d/a"));
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->kv().key(), "d/a");
  EXPECT_EQ(reply->kv().value(), "1");
}

TEST_F(KvDirectoryTest, GetKeyValue_AbsentKey_BlocksUntilInserted) {
  auto directory = Spawn();
  auto reply = Send<proto::GetKeyValueResponse>(directory, GetRequest("d/a"));
  EXPECT_FALSE(reply->has_value());
  Insert(directory, "d/a", "1");
  ASSERT_TRUE(reply->has_value());
  ASSERT_THAT(**reply, IsOk());
  EXPECT_EQ((*reply)->value().kv().value(), "1");
}

TEST_F(KvDirectoryTest, GetKeyValue_AbsentKey_WokenByIncrement) {
  auto directory = Spawn();
  auto reply = Send<proto::GetKeyValueResponse>(directory, GetRequest("d/n"));
  ASSERT_THAT(Call<proto::IncrementKeyValueResponse>(directory, IncrementRequest("d/n", 3)),
              IsOk());
  ASSERT_TRUE(reply->has_value());
  EXPECT_EQ((*reply)->value().kv().value(), "3");
}

TEST_F(KvDirectoryTest, GetKeyValue_AbsentKey_WokenByCompareAndSwapCreate) {
  auto directory = Spawn();
  auto reply = Send<proto::GetKeyValueResponse>(directory, GetRequest("d/a"));
  ASSERT_THAT(Call<proto::CompareAndSwapResponse>(directory, CasRequest("d/a", "", "x", true)),
              IsOk());
  ASSERT_TRUE(reply->has_value());
  EXPECT_EQ((*reply)->value().kv().value(), "x");
}

TEST_F(KvDirectoryTest, GetKeyValue_DeleteThenReinsert_WakesPendingGet) {
  auto directory = Spawn();
  Insert(directory, "d/a", "old");
  ASSERT_THAT(Call<proto::DeleteKeyValueResponse>(directory, DeleteRequest("d/a", false)), IsOk());
  auto reply = Send<proto::GetKeyValueResponse>(directory, GetRequest("d/a"));
  EXPECT_FALSE(reply->has_value());
  Insert(directory, "d/a", "new");
  ASSERT_TRUE(reply->has_value());
  EXPECT_EQ((*reply)->value().kv().value(), "new");
}

TEST_F(KvDirectoryTest, GetKeyValue_Timeout_DeadlineExceededExactlyAtTheTimeout) {
  auto directory = Spawn();
  auto reply = Send<proto::GetKeyValueResponse>(directory, GetRequest("d/a", 250));
  AdvanceTime(249ms);
  EXPECT_FALSE(reply->has_value());
  AdvanceTime(1ms);
  ASSERT_TRUE(reply->has_value());
  EXPECT_THAT(**reply, StatusIs(absl::StatusCode::kDeadlineExceeded,
                                AllOf(HasSubstr("key: d/a"), HasSubstr("duration: 250ms"))));
  EXPECT_TRUE(GetCoordinationError((*reply)->status()).has_value());
}

TEST_F(KvDirectoryTest, GetKeyValue_AnsweredBeforeDeadline_StaleTimerIgnored) {
  auto directory = Spawn();
  auto reply = Send<proto::GetKeyValueResponse>(directory, GetRequest("d/a", 100));
  Insert(directory, "d/a", "1");
  AdvanceTime(100ms);
  ASSERT_TRUE(reply->has_value());
  EXPECT_THAT(**reply, IsOk());
  EXPECT_EQ(Stats(directory).waiters, 0);
}

TEST_F(KvDirectoryTest, GetKeyValue_NoTimeout_WaitsPastAnyDeadline) {
  auto directory = Spawn();
  auto reply = Send<proto::GetKeyValueResponse>(directory, GetRequest("d/a", 0));
  AdvanceTime(24h);
  EXPECT_FALSE(reply->has_value());
  EXPECT_EQ(Stats(directory).waiters, 1);
}

TEST_F(KvDirectoryTest, GetKeyValue_ForgedDeadlineMessage_Ignored) {
  auto directory = Spawn();
  auto reply = Send<proto::GetKeyValueResponse>(directory, GetRequest("d/a", 0));
  caf::anon_send(directory, deadline_atom::value, uint64_t{1});
  Drain();
  EXPECT_FALSE(reply->has_value());
}

TEST_F(KvDirectoryTest, GetKeyValue_WithdrawnByRequester_Cancelled) {
  auto directory = Spawn();
  std::vector<GetReply> replies;
  auto getter = Keep(SpawnGetter(system_, directory, {GetRequest("d/a")}, replies));
  Drain();
  caf::anon_send(getter, cancel_atom::value, std::string("d/a"));
  Drain();
  ASSERT_TRUE(replies[0]->has_value());
  EXPECT_THAT(**replies[0], StatusIs(absl::StatusCode::kCancelled, HasSubstr("d/a")));
  KvStats stats = Stats(directory);
  EXPECT_EQ(stats.waiters, 0);
  EXPECT_EQ(stats.peers, 0);
}

TEST_F(KvDirectoryTest, GetKeyValue_WithdrawnByAnotherActor_StillWaits) {
  auto directory = Spawn();
  std::vector<GetReply> mine;
  std::vector<GetReply> theirs;
  Keep(SpawnGetter(system_, directory, {GetRequest("d/a")}, mine));
  auto other = Keep(SpawnGetter(system_, directory, {}, theirs));
  Drain();
  caf::anon_send(other, cancel_atom::value, std::string("d/a"));
  Drain();
  EXPECT_FALSE(mine[0]->has_value());
  Insert(directory, "d/a", "1");
  EXPECT_THAT(**mine[0], IsOk());
}

TEST_F(KvDirectoryTest, GetKeyValue_RequesterDies_WaiterAndMonitorDropped) {
  auto directory = Spawn();
  std::vector<GetReply> replies;
  auto getter = SpawnGetter(system_, directory, {GetRequest("d/a"), GetRequest("d/b")}, replies);
  Drain();
  EXPECT_EQ(Stats(directory).waiters, 2);
  caf::anon_send_exit(getter, caf::exit_reason::user_shutdown);
  Drain();
  KvStats stats = Stats(directory);
  EXPECT_EQ(stats.waiters, 0);
  EXPECT_EQ(stats.peers, 0);
  Insert(directory, "d/a", "1");
  EXPECT_FALSE(replies[0]->has_value());
}

TEST_F(KvDirectoryTest, GetKeyValue_DirectoryStops_ParkedGetsCancelled) {
  auto directory = SpawnKvDirectory(system_, "d", KvLimits());
  auto reply = Send<proto::GetKeyValueResponse>(directory, GetRequest("d/a"));
  caf::anon_send_exit(directory, caf::exit_reason::user_shutdown);
  Drain();
  ASSERT_TRUE(reply->has_value());
  EXPECT_THAT(**reply, StatusIs(absl::StatusCode::kCancelled,
                                AllOf(HasSubstr("directory d stopped"), HasSubstr("d/a"))));
}

TEST_F(KvDirectoryTest, GetKeyValue_TenThousandKeys_EachReleasedWithItsOwnValue) {
  constexpr int kKeys = 10000;
  auto directory = Spawn();
  std::vector<proto::GetKeyValueRequest> requests;
  for (int i = 0; i < kKeys; ++i) requests.push_back(GetRequest(absl::StrCat("d/k", i)));
  std::vector<GetReply> replies;
  Keep(SpawnGetter(system_, directory, requests, replies));
  Drain();
  ASSERT_EQ(Stats(directory).waiters, kKeys);
  for (int i = kKeys - 1; i >= 0; --i) {
    caf::anon_send(directory, InsertRequest(absl::StrCat("d/k", i), absl::StrCat("v", i)));
  }
  Drain();
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(replies[i]->has_value()) << i;
    ASSERT_THAT(**replies[i], IsOk());
    ASSERT_EQ((*replies[i])->value().kv().key(), absl::StrCat("d/k", i));
    ASSERT_EQ((*replies[i])->value().kv().value(), absl::StrCat("v", i));
  }
  KvStats stats = Stats(directory);
  EXPECT_EQ(stats.waiters, 0);
  EXPECT_EQ(stats.peers, 0);
}

TEST_F(KvDirectoryTest, Increment_MissingKey_ReturnsDeltaAsDecimal) {
  auto directory = Spawn();
  auto reply = Call<proto::IncrementKeyValueResponse>(directory, IncrementRequest("d/n", -4));
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->kv().key(), "d/n");
  EXPECT_EQ(reply->kv().value(), "-4");
}

TEST_F(KvDirectoryTest, Increment_NonInteger_FailedPreconditionWithPayload) {
  auto directory = Spawn();
  Insert(directory, "d/n", "1.5");
  auto reply = Call<proto::IncrementKeyValueResponse>(directory, IncrementRequest("d/n", 1));
  EXPECT_THAT(reply, StatusIs(absl::StatusCode::kFailedPrecondition,
                              AllOf(HasSubstr("d/n"), HasSubstr("1.5"))));
  EXPECT_TRUE(GetCoordinationError(reply.status()).has_value());
}

TEST_F(KvDirectoryTest, Increment_OverflowBothWays_OutOfRange) {
  auto directory = Spawn();
  Insert(directory, "d/max", std::to_string(std::numeric_limits<int64_t>::max()));
  Insert(directory, "d/min", std::to_string(std::numeric_limits<int64_t>::min()));
  EXPECT_THAT(Call<proto::IncrementKeyValueResponse>(directory, IncrementRequest("d/max", 1)),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("d/max")));
  EXPECT_THAT(Call<proto::IncrementKeyValueResponse>(directory, IncrementRequest("d/min", -1)),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("d/min")));
}

TEST_F(KvDirectoryTest, CompareAndSwap_SameExpectedTwice_FirstWinsSecondSeesCurrent) {
  auto directory = Spawn();
  Insert(directory, "d/leader", "none");
  auto first = Send<proto::CompareAndSwapResponse>(directory, CasRequest("d/leader", "none", "a"));
  auto second = Send<proto::CompareAndSwapResponse>(directory, CasRequest("d/leader", "none", "b"));
  ASSERT_THAT(**first, IsOk());
  ASSERT_THAT(**second, IsOk());
  EXPECT_TRUE((*first)->value().succeeded());
  EXPECT_FALSE((*second)->value().succeeded());
  EXPECT_TRUE((*second)->value().exists());
  EXPECT_EQ((*second)->value().current(), "a");
}

TEST_F(KvDirectoryTest, CompareAndSwap_ExpectAbsentTwice_FirstCreatesSecondFails) {
  auto directory = Spawn();
  auto first = Call<proto::CompareAndSwapResponse>(directory, CasRequest("d/x", "", "a", true));
  auto second = Call<proto::CompareAndSwapResponse>(directory, CasRequest("d/x", "", "b", true));
  ASSERT_THAT(first, IsOk());
  ASSERT_THAT(second, IsOk());
  EXPECT_TRUE(first->succeeded());
  EXPECT_FALSE(second->succeeded());
  EXPECT_EQ(second->current(), "a");
}

TEST_F(KvDirectoryTest, GetKeyValueDir_NestedEntriesInOrderWithoutTheDirectoryKey) {
  auto directory = Spawn("dir");
  for (const char* key : {"dir", "dir/b/c", "dir/a", "dir/b", "dir/a0"})
    Insert(directory, key, "v");
  auto reply = Call<proto::GetKeyValueDirResponse>(directory, DirRequest("dir"));
  ASSERT_THAT(reply, IsOk());
  EXPECT_THAT(Keys(*reply), ElementsAre("dir/a", "dir/a0", "dir/b", "dir/b/c"));
  EXPECT_EQ(reply->kv(0).value(), "v");
}

TEST_F(KvDirectoryTest, GetKeyValueDir_KeyWithoutChildren_Empty) {
  auto directory = Spawn("dir");
  Insert(directory, "dir/a", "v");
  Insert(directory, "dir/ab/c", "v");
  auto reply = Call<proto::GetKeyValueDirResponse>(directory, DirRequest("dir/a"));
  ASSERT_THAT(reply, IsOk());
  EXPECT_TRUE(reply->kv().empty());
}

TEST_F(KvDirectoryTest, Delete_IsDirectory_RemovesKeyAndSubtreeButNotSiblings) {
  auto directory = Spawn();
  for (const char* key : {"d/x", "d/x/y", "d/x/y/z", "d/xy"}) Insert(directory, key, "v");
  ASSERT_THAT(Call<proto::DeleteKeyValueResponse>(directory, DeleteRequest("d/x", true)), IsOk());
  auto reply = Call<proto::GetKeyValueDirResponse>(directory, DirRequest("d"));
  EXPECT_THAT(Keys(*reply), ElementsAre("d/xy"));
}

TEST_F(KvDirectoryTest, Delete_NotDirectory_KeepsSubtree) {
  auto directory = Spawn();
  for (const char* key : {"d/x", "d/x/y"}) Insert(directory, key, "v");
  ASSERT_THAT(Call<proto::DeleteKeyValueResponse>(directory, DeleteRequest("d/x", false)), IsOk());
  EXPECT_THAT(Keys(*Call<proto::GetKeyValueDirResponse>(directory, DirRequest("d"))),
              ElementsAre("d/x/y"));
}

TEST_F(KvDirectoryTest, Delete_AbsentKey_Ok) {
  auto directory = Spawn();
  EXPECT_THAT(Call<proto::DeleteKeyValueResponse>(directory, DeleteRequest("d/none", true)),
              IsOk());
}

}  // namespace
}  // namespace muster
