// The job-health calls of the key-value directory actor: WaitForKeys (answered at once, parked
// until the insert that reaches its count, deadlines, requester death, shutdown), ephemeral
// keys dropped with their owner, and ReduceKeyValueDir. Deterministic, simulated time.
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/actors/kv/directory/kv_directory_actor.h"
#include "muster/messages/task_name.h"
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
using ::muster::testing::EventLog;
using ::muster::testing::GetRequest;
using ::muster::testing::IncrementRequest;
using ::muster::testing::InsertRequest;
using ::muster::testing::IsOk;
using ::muster::testing::Keys;
using ::muster::testing::KvStats;
using ::muster::testing::ReduceRequest;
using ::muster::testing::Reply;
using ::muster::testing::SpawnWatcher;
using ::muster::testing::StatusIs;
using ::muster::testing::TryGetRequest;
using ::muster::testing::UpdateRequest;
using ::muster::testing::WaitForKeysRequest;
using ::muster::testing::WatchRequest;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Kind = proto::KeyValueChangeEvent;
using WaitReply = Reply<proto::WaitForKeysResponse>;

// "<kind> <key>=<value> (<watched>)" per event.
std::vector<std::string> Describe(const EventLog& log) {
  std::vector<std::string> lines;
  for (const auto& event : *log) {
    lines.push_back(absl::StrCat(Kind::Kind_Name(event.kind()), " ", event.key(), "=",
                                 event.value(), " (", event.watched_key(), ")"));
  }
  return lines;
}

// Marks a write ephemeral for `task`'s incarnation `incarnation`, as the coordinator does.
template <class Request>
Request Ephemeral(Request request, int task, uint64_t incarnation) {
  request.set_ephemeral(true);
  *request.mutable_source_task() = MakeTask("worker", task);
  request.set_owner_incarnation(incarnation);
  return request;
}

class KvDirectoryHealthTest : public DeterministicTest {
 protected:
  KvDirectoryActor Spawn(const std::string& directory = "d", KvLimits limits = KvLimits()) {
    return Keep(SpawnKvDirectory(system_, directory, limits));
  }
  void Insert(const KvDirectoryActor& directory, const std::string& key,
              const std::string& value = "v") {
    ASSERT_THAT(Call<proto::InsertKeyValueResponse>(directory, InsertRequest(key, value)), IsOk());
  }
  template <class Response, class Request>
  void Ok(const KvDirectoryActor& directory, const Request& request) {
    ASSERT_THAT(Call<Response>(directory, request), IsOk());
  }
  WaitReply Wait(const KvDirectoryActor& directory, const std::string& key, int64_t count,
                 int64_t timeout_ms = 0) {
    return Send<proto::WaitForKeysResponse>(directory, WaitForKeysRequest(key, count, timeout_ms));
  }
  // Like Wait, from a requester the test can kill (it is not kept alive by the fixture); on
  // (cancel_atom, key) it sends (cancel_atom, key) to the directory itself.
  caf::actor WaitFrom(const KvDirectoryActor& directory, const proto::WaitForKeysRequest& request,
                      WaitReply reply) {
    auto requester = system_.spawn([=](caf::event_based_actor* self) -> caf::behavior {
      self->request(directory, caf::infinite, request)
          .then([=](proto::WaitForKeysResponse& response) { *reply = std::move(response); },
                [=](caf::error& error) { *reply = ToStatus(error); });
      return {[=](cancel_atom, const std::string& key) {
        self->send(directory, cancel_atom::value, key);
      }};
    });
    Drain();
    return requester;
  }
  KvStats Stats(const KvDirectoryActor& directory) {
    auto stats = AskStats(system_, directory);
    Drain();
    return *stats;
  }
  EventLog Watch(const KvDirectoryActor& directory, const std::string& key) {
    auto log = std::make_shared<std::vector<proto::KeyValueChangeEvent>>();
    auto watcher = Keep(SpawnWatcher(system_, log));
    EXPECT_THAT(Call<proto::WatchKeyResponse>(directory, WatchRequest(key), watcher), IsOk());
    return log;
  }
  std::optional<std::string> Value(const KvDirectoryActor& directory, const std::string& key) {
    auto reply = Call<proto::TryGetKeyValueResponse>(directory, TryGetRequest(key));
    if (!reply.ok()) return std::nullopt;
    return reply->kv().value();
  }
  void DropOwner(const KvDirectoryActor& directory, int task, uint64_t incarnation) {
    caf::anon_send(directory, drop_owner_atom::value, TaskName(MakeTask("worker", task)),
                   incarnation);
    Drain();
  }
};

// WaitForKeys

TEST_F(KvDirectoryHealthTest, WaitForKeys_EnoughKeys_AnsweredAtOnceWithAllInKeyOrder) {
  auto directory = Spawn();
  Insert(directory, "d/r/1", "b");
  Insert(directory, "d/r/0", "a");
  Insert(directory, "d/r/2", "c");
  auto reply = Call<proto::WaitForKeysResponse>(directory, WaitForKeysRequest("d/r", 2));
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->directory_key(), "d/r");
  EXPECT_THAT(Keys(*reply), ElementsAre("d/r/0", "d/r/1", "d/r/2"));  // all, not just 2
  EXPECT_EQ(reply->kv(0).value(), "a");
  EXPECT_EQ(reply->kv(2).value(), "c");
  EXPECT_EQ(Stats(directory).waiters, 0);
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_TooFewKeys_AnsweredByTheInsertThatReachesCount) {
  auto directory = Spawn();
  Insert(directory, "d/r/2", "two");
  WaitReply reply = Wait(directory, "d/r", 3, 0);
  EXPECT_FALSE(reply->has_value());
  KvStats parked = Stats(directory);
  EXPECT_EQ(parked.waiters, 1);
  EXPECT_EQ(parked.peers, 1);
  Insert(directory, "d/r/1", "one");
  EXPECT_FALSE(reply->has_value());
  Insert(directory, "d/r/0", "zero");
  ASSERT_TRUE(reply->has_value());
  ASSERT_THAT(**reply, IsOk());
  const proto::WaitForKeysResponse& response = (*reply)->value();
  EXPECT_EQ(response.directory_key(), "d/r");
  EXPECT_THAT(Keys(response), ElementsAre("d/r/0", "d/r/1", "d/r/2"));
  EXPECT_EQ(response.kv(0).value(), "zero");
  EXPECT_EQ(response.kv(1).value(), "one");
  EXPECT_EQ(response.kv(2).value(), "two");
  KvStats stats = Stats(directory);
  EXPECT_EQ(stats.waiters, 0);
  EXPECT_EQ(stats.peers, 0);
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_TwoWaitersDifferentCounts_EachAnsweredAtItsCount) {
  auto directory = Spawn();
  WaitReply two = Wait(directory, "d/r", 2);
  WaitReply one = Wait(directory, "d/r", 1);
  Insert(directory, "d/r/b");
  ASSERT_TRUE(one->has_value());
  EXPECT_THAT(Keys((*one)->value()), ElementsAre("d/r/b"));
  EXPECT_FALSE(two->has_value());
  Insert(directory, "d/r/a");
  ASSERT_TRUE(two->has_value());
  EXPECT_THAT(Keys((*two)->value()), ElementsAre("d/r/a", "d/r/b"));
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_Timeout_DeadlineExceededNamingNOfMKeys) {
  auto directory = Spawn();
  Insert(directory, "d/r/0");
  WaitReply reply = Wait(directory, "d/r", 3, 500);
  AdvanceTime(250ms);
  Insert(directory, "d/r/1");
  AdvanceTime(249ms);
  EXPECT_FALSE(reply->has_value());
  AdvanceTime(1ms);
  ASSERT_TRUE(reply->has_value());
  EXPECT_THAT(**reply, StatusIs(absl::StatusCode::kDeadlineExceeded,
                                AllOf(HasSubstr("WaitForKeys timed out after 500ms"),
                                      HasSubstr("2 of 3 keys under d/r"))));
  EXPECT_TRUE(GetCoordinationError((*reply)->status()).has_value());
  KvStats stats = Stats(directory);
  EXPECT_EQ(stats.waiters, 0);
  EXPECT_EQ(stats.peers, 0);
  Insert(directory, "d/r/2");  // too late: nothing more is delivered
  EXPECT_THAT(**reply, StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_AnsweredBeforeDeadline_StaleTimerIgnored) {
  auto directory = Spawn();
  WaitReply reply = Wait(directory, "d/r", 1, 100);
  Insert(directory, "d/r/0");
  AdvanceTime(100ms);
  ASSERT_TRUE(reply->has_value());
  EXPECT_THAT(**reply, IsOk());
  EXPECT_EQ(Stats(directory).waiters, 0);
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_NoTimeout_WaitsPastAnyDeadline) {
  auto directory = Spawn();
  WaitReply reply = Wait(directory, "d/r", 1, 0);
  AdvanceTime(24h);
  EXPECT_FALSE(reply->has_value());
  EXPECT_EQ(Stats(directory).waiters, 1);
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_KeyAtTheDirectoryOrInAnotherSubdirectory_DoesNotCount) {
  auto directory = Spawn();
  WaitReply reply = Wait(directory, "d/r", 1);
  for (const char* key : {"d/r", "d/s/0", "d/r0/0", "d/rx", "d/q/r/0"}) Insert(directory, key);
  EXPECT_FALSE(reply->has_value());
  Insert(directory, "d/r/0");
  ASSERT_TRUE(reply->has_value());
  ASSERT_THAT(**reply, IsOk());
  EXPECT_THAT(Keys((*reply)->value()), ElementsAre("d/r/0"));
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_KeyInANestedDirectory_Counts) {
  auto directory = Spawn();
  WaitReply reply = Wait(directory, "d/r", 2);
  Insert(directory, "d/r/a/b/c");
  EXPECT_FALSE(reply->has_value());
  Insert(directory, "d/r/z");
  ASSERT_TRUE(reply->has_value());
  EXPECT_THAT(Keys((*reply)->value()), ElementsAre("d/r/a/b/c", "d/r/z"));
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_TheActorsOwnDirectory_CountsEveryKeyUnderIt) {
  auto directory = Spawn();
  WaitReply reply = Wait(directory, "d", 2);
  Insert(directory, "d");  // the directory key itself does not count
  Insert(directory, "d/a");
  EXPECT_FALSE(reply->has_value());
  Insert(directory, "d/b/c");
  ASSERT_TRUE(reply->has_value());
  EXPECT_THAT(Keys((*reply)->value()), ElementsAre("d/a", "d/b/c"));
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_OverwritesAndReinsertsOfOneKey_CountOnce) {
  auto directory = Spawn();
  WaitReply reply = Wait(directory, "d/r", 2);
  Insert(directory, "d/r/0", "1");
  Ok<proto::InsertKeyValueResponse>(directory, InsertRequest("d/r/0", "2", true));
  Ok<proto::UpdateKeyValueResponse>(directory, UpdateRequest("d/r/0", "3"));
  Ok<proto::DeleteKeyValueResponse>(directory, DeleteRequest("d/r/0", false));
  Insert(directory, "d/r/0", "4");
  EXPECT_FALSE(reply->has_value());
  EXPECT_EQ(Stats(directory).waiters, 1);
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_WokenByIncrementAndCompareAndSwapCreate) {
  auto directory = Spawn();
  WaitReply reply = Wait(directory, "d/r", 2);
  Ok<proto::IncrementKeyValueResponse>(directory, IncrementRequest("d/r/n", 5));
  EXPECT_FALSE(reply->has_value());
  Ok<proto::CompareAndSwapResponse>(directory, CasRequest("d/r/c", "", "x", true));
  ASSERT_TRUE(reply->has_value());
  ASSERT_THAT(**reply, IsOk());
  EXPECT_THAT(Keys((*reply)->value()), ElementsAre("d/r/c", "d/r/n"));
  EXPECT_EQ((*reply)->value().kv(1).value(), "5");
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_GetOfTheDirectoryKeyIsSeparate) {
  auto directory = Spawn();
  auto get = Send<proto::GetKeyValueResponse>(directory, GetRequest("d/r"));
  WaitReply wait = Wait(directory, "d/r", 1);
  EXPECT_EQ(Stats(directory).waiters, 2);
  Insert(directory, "d/r", "self");
  ASSERT_TRUE(get->has_value());
  EXPECT_EQ((*get)->value().kv().value(), "self");
  EXPECT_FALSE(wait->has_value());
  Insert(directory, "d/r/0");
  ASSERT_TRUE(wait->has_value());
  EXPECT_THAT(**wait, IsOk());
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_BadCountOrTimeout_InvalidArgumentNothingParked) {
  KvLimits limits;
  limits.max_keys_per_directory = 10;
  auto directory = Spawn("d", limits);
  EXPECT_THAT(
      Call<proto::WaitForKeysResponse>(directory, WaitForKeysRequest("d/r", 0)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("WaitForKeys of d/r asks for 0 keys"), HasSubstr("give 1 to 10"))));
  EXPECT_THAT(Call<proto::WaitForKeysResponse>(directory, WaitForKeysRequest("d/r", -2)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("asks for -2 keys")));
  EXPECT_THAT(Call<proto::WaitForKeysResponse>(directory, WaitForKeysRequest("d/r", 11)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("asks for 11 keys")));
  EXPECT_THAT(Call<proto::WaitForKeysResponse>(directory, WaitForKeysRequest("d/r", 1, -1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a timeout of -1 ms")));
  EXPECT_THAT(Call<proto::WaitForKeysResponse>(directory,
                                               WaitForKeysRequest("d/r", 1, kMaxGetTimeoutMs + 1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("a timeout of ", kMaxGetTimeoutMs + 1, " ms"))));
  EXPECT_EQ(Stats(directory).waiters, 0);
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_DirectoryOfAnotherActorOrUnnormalised_InvalidArgument) {
  auto directory = Spawn();
  EXPECT_THAT(Call<proto::WaitForKeysResponse>(directory, WaitForKeysRequest("e/r", 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("directory d")));
  EXPECT_THAT(Call<proto::WaitForKeysResponse>(directory, WaitForKeysRequest("d//r", 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not normalised")));
  EXPECT_THAT(Call<proto::WaitForKeysResponse>(directory, WaitForKeysRequest("", 1)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(Stats(directory).waiters, 0);
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_RequesterDies_WaiterAndMonitorDropped) {
  auto directory = Spawn();
  WaitReply reply = std::make_shared<std::optional<absl::StatusOr<proto::WaitForKeysResponse>>>();
  caf::actor requester = WaitFrom(directory, WaitForKeysRequest("d/r", 1, 1000), reply);
  EXPECT_EQ(Stats(directory).waiters, 1);
  caf::anon_send_exit(requester, caf::exit_reason::user_shutdown);
  Drain();
  KvStats stats = Stats(directory);
  EXPECT_EQ(stats.waiters, 0);
  EXPECT_EQ(stats.peers, 0);
  Insert(directory, "d/r/0");
  AdvanceTime(1s);  // its deadline finds nothing to fail
  EXPECT_FALSE(reply->has_value());
  EXPECT_EQ(Stats(directory).keys, 1);
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_DirectoryStops_ParkedWaitCancelled) {
  auto directory = SpawnKvDirectory(system_, "d", KvLimits());
  WaitReply reply = Wait(directory, "d/r", 2);
  auto get = Send<proto::GetKeyValueResponse>(directory, GetRequest("d/k"));
  caf::anon_send_exit(directory, caf::exit_reason::user_shutdown);
  Drain();
  ASSERT_TRUE(reply->has_value());
  EXPECT_THAT(**reply, StatusIs(absl::StatusCode::kCancelled,
                                AllOf(HasSubstr("directory d stopped"),
                                      HasSubstr("WaitForKeys waited for keys under d/r"))));
  ASSERT_TRUE(get->has_value());
  EXPECT_THAT(**get,
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("GetKeyValue waited for key d/k")));
}

TEST_F(KvDirectoryHealthTest, WaitForKeys_CancelOfTheSameKey_LeavesTheWaitParked) {
  auto directory = Spawn();
  WaitReply reply = std::make_shared<std::optional<absl::StatusOr<proto::WaitForKeysResponse>>>();
  caf::actor requester = Keep(WaitFrom(directory, WaitForKeysRequest("d/r", 1), reply));
  // cancel_atom withdraws the sender's GetKeyValue calls only.
  caf::anon_send(requester, cancel_atom::value, std::string("d/r"));
  Drain();
  EXPECT_FALSE(reply->has_value());
  EXPECT_EQ(Stats(directory).waiters, 1);
  Insert(directory, "d/r/0");
  ASSERT_TRUE(reply->has_value());
  EXPECT_THAT(**reply, IsOk());
}

// Ephemeral keys

TEST_F(KvDirectoryHealthTest, DropOwner_DeletesOwnersKeysWithDeletedEventsInKeyOrder) {
  auto directory = Spawn();
  Ok<proto::InsertKeyValueResponse>(directory,
                                    Ephemeral(InsertRequest("d/addr/0", "a"), /*task=*/0, 7));
  Ok<proto::InsertKeyValueResponse>(directory, Ephemeral(InsertRequest("d/a", "a"), 0, 7));
  Ok<proto::InsertKeyValueResponse>(directory, Ephemeral(InsertRequest("d/addr/1", "b"), 1, 7));
  Ok<proto::InsertKeyValueResponse>(directory, Ephemeral(InsertRequest("d/next", "c"), 0, 8));
  Insert(directory, "d/persistent", "p");
  EventLog log = Watch(directory, "d");
  DropOwner(directory, 0, 7);
  EXPECT_THAT(Describe(log), ElementsAre("DELETED d/a= (d)", "DELETED d/addr/0= (d)"));
  EXPECT_EQ(Value(directory, "d/a"), std::nullopt);
  EXPECT_EQ(Value(directory, "d/addr/0"), std::nullopt);
  EXPECT_EQ(Value(directory, "d/addr/1"), "b");
  EXPECT_EQ(Value(directory, "d/next"), "c");
  EXPECT_EQ(Value(directory, "d/persistent"), "p");
  DropOwner(directory, 0, 7);  // again: nothing left
  EXPECT_EQ(log->size(), 2u);
  DropOwner(directory, 1, 7);
  EXPECT_THAT(Describe(log),
              ElementsAre("DELETED d/a= (d)", "DELETED d/addr/0= (d)", "DELETED d/addr/1= (d)"));
  EXPECT_EQ(Stats(directory).keys, 2);
}

TEST_F(KvDirectoryHealthTest, DropOwner_UpdateAndCompareAndSwapMakeKeysEphemeral) {
  auto directory = Spawn();
  Insert(directory, "d/u", "1");
  Ok<proto::UpdateKeyValueResponse>(directory, Ephemeral(UpdateRequest("d/u", "2"), 0, 3));
  Ok<proto::CompareAndSwapResponse>(directory, Ephemeral(CasRequest("d/c", "", "x", true), 0, 3));
  Ok<proto::InsertKeyValueResponse>(directory, Ephemeral(InsertRequest("d/k", "1"), 0, 3));
  Ok<proto::IncrementKeyValueResponse>(directory, IncrementRequest("d/k", 1));  // persistent now
  EventLog log = Watch(directory, "d");
  DropOwner(directory, 0, 3);
  EXPECT_THAT(Describe(log), ElementsAre("DELETED d/c= (d)", "DELETED d/u= (d)"));
  EXPECT_EQ(Value(directory, "d/k"), "2");
}

TEST_F(KvDirectoryHealthTest, DropOwner_EphemeralWithoutIncarnation_IsPersistent) {
  auto directory = Spawn();
  // The coordinator stamps owner_incarnation; without it a write cannot be owned.
  Ok<proto::InsertKeyValueResponse>(directory, Ephemeral(InsertRequest("d/a", "1"), 0, 0));
  EventLog log = Watch(directory, "d");
  DropOwner(directory, 0, 0);
  EXPECT_THAT(*log, IsEmpty());
  EXPECT_EQ(Value(directory, "d/a"), "1");
}

TEST_F(KvDirectoryHealthTest, DropOwner_KeysWaitedForCountAgainOnlyWhenReinserted) {
  auto directory = Spawn();
  Ok<proto::InsertKeyValueResponse>(directory, Ephemeral(InsertRequest("d/r/0", "a"), 0, 1));
  WaitReply reply = Wait(directory, "d/r", 2);
  DropOwner(directory, 0, 1);
  Insert(directory, "d/r/1");
  EXPECT_FALSE(reply->has_value());  // d/r/0 is gone: one key of two
  Ok<proto::InsertKeyValueResponse>(directory, Ephemeral(InsertRequest("d/r/0", "b"), 0, 2));
  ASSERT_TRUE(reply->has_value());
  EXPECT_THAT(Keys((*reply)->value()), ElementsAre("d/r/0", "d/r/1"));
}

// ReduceKeyValueDir

TEST_F(KvDirectoryHealthTest, Reduce_MaxMinSumOverTheDirectory) {
  auto directory = Spawn();
  Insert(directory, "d/steps/0", "120");
  Insert(directory, "d/steps/1", "-4");
  Insert(directory, "d/steps/2", "99");
  Insert(directory, "d/steps", "not counted");
  Insert(directory, "d/other/0", "1000");
  auto max = Call<proto::ReduceKeyValueDirResponse>(directory,
                                                    ReduceRequest("d/steps", proto::REDUCE_MAX));
  ASSERT_THAT(max, IsOk());
  EXPECT_EQ(max->value(), 120);
  EXPECT_EQ(max->count(), 3);
  auto min = Call<proto::ReduceKeyValueDirResponse>(directory,
                                                    ReduceRequest("d/steps", proto::REDUCE_MIN));
  ASSERT_THAT(min, IsOk());
  EXPECT_EQ(min->value(), -4);
  auto sum = Call<proto::ReduceKeyValueDirResponse>(directory,
                                                    ReduceRequest("d/steps", proto::REDUCE_SUM));
  ASSERT_THAT(sum, IsOk());
  EXPECT_EQ(sum->value(), 215);
  EXPECT_EQ(sum->count(), 3);
}

TEST_F(KvDirectoryHealthTest, Reduce_Errors_CodesWithPayload) {
  auto directory = Spawn();
  auto empty =
      Call<proto::ReduceKeyValueDirResponse>(directory, ReduceRequest("d/r", proto::REDUCE_SUM));
  EXPECT_THAT(empty, StatusIs(absl::StatusCode::kNotFound, HasSubstr("no keys under d/r")));
  EXPECT_TRUE(GetCoordinationError(empty.status()).has_value());
  Insert(directory, "d/r/0", "7");
  Insert(directory, "d/r/x", "seven");
  auto text =
      Call<proto::ReduceKeyValueDirResponse>(directory, ReduceRequest("d/r", proto::REDUCE_MAX));
  EXPECT_THAT(text, StatusIs(absl::StatusCode::kFailedPrecondition,
                             AllOf(HasSubstr("key d/r/x"), HasSubstr("\"seven\""))));
  EXPECT_TRUE(GetCoordinationError(text.status()).has_value());
  EXPECT_THAT(Call<proto::ReduceKeyValueDirResponse>(
                  directory, ReduceRequest("d/r", proto::REDUCE_UNSPECIFIED)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("names op 0")));
  Insert(directory, "d/big/0", std::to_string(std::numeric_limits<int64_t>::max()));
  Insert(directory, "d/big/1", "1");
  EXPECT_THAT(
      Call<proto::ReduceKeyValueDirResponse>(directory, ReduceRequest("d/big", proto::REDUCE_SUM)),
      StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("overflows")));
  EXPECT_THAT(
      Call<proto::ReduceKeyValueDirResponse>(directory, ReduceRequest("e/r", proto::REDUCE_SUM)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("directory d")));
}

}  // namespace
}  // namespace muster
