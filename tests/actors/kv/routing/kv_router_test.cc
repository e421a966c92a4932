// Routing of key-value requests: normalisation, sharding by first path segment, validation,
// root fan-out, withdrawal and directory replacement, through a test-only router actor that
// does what the coordinator does. Deterministic, simulated time.
#include "muster/actors/kv/routing/kv_router.h"

#include <string>
#include <utility>
#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/actors/kv/kv_test_helpers.h"
#include "tests/testing/deterministic_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::DeleteRequest;
using ::muster::testing::DeterministicTest;
using ::muster::testing::DirRequest;
using ::muster::testing::GetReply;
using ::muster::testing::GetRequest;
using ::muster::testing::InsertRequest;
using ::muster::testing::IsOk;
using ::muster::testing::Keys;
using ::muster::testing::ReduceRequest;
using ::muster::testing::SpawnGetter;
using ::muster::testing::SpawnWatcher;
using ::muster::testing::StatusIs;
using ::muster::testing::TryGetRequest;
using ::muster::testing::WaitForKeysRequest;
using ::muster::testing::WatchRequest;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The key-value part of the coordinator's interface.
using TestRouterActor = KvStoreActor;

struct TestRouterState {
  KvRouter router;
};

using TestRouterPointer = TestRouterActor::stateful_pointer<TestRouterState>;

// What the coordinator does: owns a KvRouter, monitors the directories it spawns, forgets the
// ones that go down, and routes every key-value request without waiting.
TestRouterActor::behavior_type TestRouter(TestRouterPointer self, KvLimits limits,
                                          KvRouter::SpawnFn spawn) {
  self->state.router =
      KvRouter(limits, [self, spawn](const std::string& directory, const KvLimits& limits) {
        KvDirectoryActor actor = spawn(directory, limits);
        self->monitor(actor);
        return actor;
      });
  self->set_down_handler([=](caf::down_msg& down) { self->state.router.Forget(down.source); });
  KvRouter* router = &self->state.router;
  return {
      [=](const proto::InsertKeyValueRequest& r) { return RouteKvRequest(self, *router, r); },
      [=](const proto::UpdateKeyValueRequest& r) { return RouteKvRequest(self, *router, r); },
      [=](const proto::GetKeyValueRequest& r) { return RouteKvRequest(self, *router, r); },
      [=](const proto::TryGetKeyValueRequest& r) { return RouteKvRequest(self, *router, r); },
      [=](const proto::IncrementKeyValueRequest& r) { return RouteKvRequest(self, *router, r); },
      [=](const proto::GetKeyValueDirRequest& r) { return RouteKvRequest(self, *router, r); },
      [=](const proto::DeleteKeyValueRequest& r) { return RouteKvRequest(self, *router, r); },
      [=](const proto::CompareAndSwapRequest& r) { return RouteKvRequest(self, *router, r); },
      [=](const proto::WatchKeyRequest& r, const KvWatcherActor& watcher) {
        return RouteKvRequest(self, *router, r, watcher);
      },
      [=](const proto::StopWatchKeyRequest& r, const KvWatcherActor& watcher) {
        return RouteKvRequest(self, *router, r, watcher);
      },
      [=](const proto::ReduceKeyValueDirRequest& r) { return RouteKvRequest(self, *router, r); },
      [=](const proto::WaitForKeysRequest& r) { return RouteKvRequest(self, *router, r); },
      [=](cancel_atom, const std::string& key) { RouteKvCancel(self, *router, key); },
  };
}

class KvRouterTest : public DeterministicTest {
 protected:
  // Spawns directory actors, keeping them (and their names) for the test.
  KvRouter::SpawnFn Spawner() {
    return [this](const std::string& directory, const KvLimits& limits) {
      spawned_.push_back(directory);
      directories_.push_back(Keep(SpawnKvDirectory(system_, directory, limits)));
      return directories_.back();
    };
  }
  TestRouterActor SpawnRouter(KvLimits limits = KvLimits()) {
    return Keep(system_.spawn(TestRouter, limits, Spawner()));
  }
  void Insert(const TestRouterActor& router, const std::string& key) {
    ASSERT_THAT(Call<proto::InsertKeyValueResponse>(router, InsertRequest(key, "v")), IsOk());
  }
  std::vector<std::string> ListKeys(const TestRouterActor& router, const std::string& dir) {
    auto reply = Call<proto::GetKeyValueDirResponse>(router, DirRequest(dir));
    EXPECT_THAT(reply, IsOk());
    return reply.ok() ? Keys(*reply) : std::vector<std::string>{"<error>"};
  }

  std::vector<std::string> spawned_;
  std::vector<KvDirectoryActor> directories_;
};

TEST_F(KvRouterTest, Route_GetWithNegativeOrHugeTimeout_InvalidArgumentNothingSpawned) {
  KvRouter router(KvLimits(), Spawner());
  for (int64_t timeout : {int64_t{-1}, kMaxGetTimeoutMs + 1}) {
    proto::GetKeyValueRequest get = GetRequest("nccl/id");
    get.set_timeout_in_ms(timeout);
    EXPECT_THAT(router.Route(get).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("a timeout of ", timeout, " ms"))));
  }
  EXPECT_THAT(spawned_, IsEmpty());
  for (int64_t timeout : {int64_t{0}, kMaxGetTimeoutMs}) {
    proto::GetKeyValueRequest get = GetRequest("nccl/id");
    get.set_timeout_in_ms(timeout);
    EXPECT_THAT(router.Route(get).status(), IsOk());
  }
}

TEST_F(KvRouterTest, Route_ReduceOrWaitForKeysOfTheRoot_InvalidArgumentNothingSpawned) {
  KvRouter router(KvLimits(), Spawner());
  for (const char* root : {"", "/", "///"}) {
    proto::ReduceKeyValueDirRequest reduce = ReduceRequest(root, proto::REDUCE_SUM);
    EXPECT_THAT(router.Route(reduce).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("ReduceKeyValueDir of the root: name a directory")))
        << "\"" << root << "\"";
    proto::WaitForKeysRequest wait = WaitForKeysRequest(root, 1);
    EXPECT_THAT(router.Route(wait).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("WaitForKeys of the root: name a directory")))
        << "\"" << root << "\"";
  }
  EXPECT_THAT(spawned_, IsEmpty());
}

TEST_F(KvRouterTest, Route_WaitForKeysCountOutOfRange_InvalidArgumentNothingSpawned) {
  KvLimits limits;
  limits.max_keys_per_directory = 8;
  KvRouter router(limits, Spawner());
  for (int64_t count : {int64_t{0}, int64_t{-1}, int64_t{9}}) {
    proto::WaitForKeysRequest wait = WaitForKeysRequest("ranks", count);
    EXPECT_THAT(router.Route(wait).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(absl::StrCat("asks for ", count, " keys")),
                               HasSubstr("give 1 to 8"))));
  }
  EXPECT_THAT(spawned_, IsEmpty());
  proto::WaitForKeysRequest most = WaitForKeysRequest("ranks", 8);
  EXPECT_THAT(router.Route(most).status(), IsOk());
  EXPECT_THAT(spawned_, ElementsAre("ranks"));
}

TEST_F(KvRouterTest, Route_WaitForKeysNegativeOrHugeTimeout_InvalidArgumentNothingSpawned) {
  KvRouter router(KvLimits(), Spawner());
  for (int64_t timeout : {int64_t{-1}, kMaxGetTimeoutMs + 1}) {
    proto::WaitForKeysRequest wait = WaitForKeysRequest("ranks", 1, timeout);
    EXPECT_THAT(router.Route(wait).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("a timeout of ", timeout, " ms"))));
  }
  EXPECT_THAT(spawned_, IsEmpty());
  for (int64_t timeout : {int64_t{0}, kMaxGetTimeoutMs}) {
    proto::WaitForKeysRequest wait = WaitForKeysRequest("ranks", 1, timeout);
    EXPECT_THAT(router.Route(wait).status(), IsOk());
  }
  EXPECT_THAT(spawned_, ElementsAre("ranks"));
}

TEST_F(KvRouterTest, Route_ReduceAndWaitForKeys_NormaliseTheDirectoryInPlace) {
  KvRouter router(KvLimits(), Spawner());
  proto::ReduceKeyValueDirRequest reduce = ReduceRequest("//steps//job/", proto::REDUCE_MAX);
  proto::WaitForKeysRequest wait = WaitForKeysRequest("/ranks///a/", 2);
  ASSERT_THAT(router.Route(reduce).status(), IsOk());
  ASSERT_THAT(router.Route(wait).status(), IsOk());
  EXPECT_EQ(reduce.directory_key(), "steps/job");
  EXPECT_EQ(wait.directory_key(), "ranks/a");
  EXPECT_THAT(spawned_, ElementsAre("steps", "ranks"));
}

TEST_F(KvRouterTest, Route_OneDirectoryMoreThanTheLimit_ResourceExhaustedOthersServed) {
  KvLimits limits;
  limits.max_directories = 2;
  KvRouter router(limits, Spawner());
  proto::InsertKeyValueRequest a = InsertRequest("a/x", "v");
  proto::InsertKeyValueRequest b = InsertRequest("b/x", "v");
  proto::TryGetKeyValueRequest c = TryGetRequest("c/x");
  proto::TryGetKeyValueRequest a2 = TryGetRequest("a/y");
  ASSERT_THAT(router.Route(a).status(), IsOk());
  ASSERT_THAT(router.Route(b).status(), IsOk());
  EXPECT_THAT(router.Route(c).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("--max-directories")));
  EXPECT_THAT(router.Route(a2).status(), IsOk());
  EXPECT_THAT(spawned_, ElementsAre("a", "b"));
}

TEST_F(KvRouterTest, Route_SameFirstSegment_SameDirectorySpawnedOnce) {
  KvRouter router(KvLimits(), Spawner());
  proto::InsertKeyValueRequest nested = InsertRequest("nccl/id/3", "v");
  proto::TryGetKeyValueRequest itself = TryGetRequest("nccl");
  auto first = router.Route(nested);
  auto second = router.Route(itself);
  ASSERT_THAT(first, IsOk());
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(*first, *second);
  EXPECT_THAT(spawned_, ElementsAre("nccl"));
}

TEST_F(KvRouterTest, Route_OtherFirstSegment_OtherDirectory) {
  KvRouter router(KvLimits(), Spawner());
  proto::GetKeyValueRequest a = GetRequest("a/x");
  proto::GetKeyValueRequest b = GetRequest("b/x");
  auto first = router.Route(a);
  auto second = router.Route(b);
  ASSERT_THAT(first, IsOk());
  ASSERT_THAT(second, IsOk());
  EXPECT_NE(*first, *second);
  EXPECT_THAT(spawned_, ElementsAre("a", "b"));
}

TEST_F(KvRouterTest, Route_NormalisesKeyInPlace) {
  KvRouter router(KvLimits(), Spawner());
  proto::InsertKeyValueRequest request = InsertRequest("///nccl//id/3/", "v");
  ASSERT_THAT(router.Route(request), IsOk());
  EXPECT_EQ(request.kv().key(), "nccl/id/3");
}

TEST_F(KvRouterTest, Route_EmptyKey_InvalidArgumentWithoutSpawning) {
  KvRouter router(KvLimits(), Spawner());
  proto::TryGetKeyValueRequest request = TryGetRequest("//");
  EXPECT_THAT(router.Route(request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty once normalised")));
  EXPECT_THAT(spawned_, IsEmpty());
}

TEST_F(KvRouterTest, Route_ValueOverLimit_ResourceExhaustedWithoutSpawning) {
  KvLimits limits;
  limits.max_value_bytes = 2;
  KvRouter router(limits, Spawner());
  proto::InsertKeyValueRequest request = InsertRequest("a/b", "xyz");
  EXPECT_THAT(router.Route(request),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("a/b")));
  EXPECT_THAT(spawned_, IsEmpty());
}

TEST_F(KvRouterTest, Route_KeyOverLimit_InvalidArgument) {
  KvLimits limits;
  limits.max_key_bytes = 3;
  KvRouter router(limits, Spawner());
  proto::GetKeyValueRequest request = GetRequest("a/bc");
  EXPECT_THAT(router.Route(request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("4 bytes")));
}

TEST_F(KvRouterTest, Route_WithoutSpawnFunction_InvalidArgument) {
  KvRouter router;
  proto::GetKeyValueRequest request = GetRequest("a/b");
  EXPECT_THAT(router.Route(request), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(KvRouterTest, Find_UnusedDirectory_NeverSpawns) {
  KvRouter router(KvLimits(), Spawner());
  EXPECT_FALSE(router.Find("a/b").has_value());
  EXPECT_THAT(spawned_, IsEmpty());
}

TEST_F(KvRouterTest, SpansRoot_OnlyRootListingsAndRootDirectoryDeletes) {
  proto::GetKeyValueDirRequest root = DirRequest("//");
  proto::GetKeyValueDirRequest dir = DirRequest("a");
  proto::DeleteKeyValueRequest delete_all = DeleteRequest("/", true);
  proto::DeleteKeyValueRequest delete_root_key = DeleteRequest("/", false);
  EXPECT_TRUE(KvRouter::SpansRoot(root));
  EXPECT_FALSE(KvRouter::SpansRoot(dir));
  EXPECT_TRUE(KvRouter::SpansRoot(delete_all));
  EXPECT_FALSE(KvRouter::SpansRoot(delete_root_key));
}

TEST_F(KvRouterTest, RoutedGet_UnnormalisedKey_ReplyNamesNormalisedKey) {
  auto router = SpawnRouter();
  auto reply = Send<proto::GetKeyValueResponse>(router, GetRequest("//nccl///id/"));
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(router, InsertRequest("nccl/id", "42")), IsOk());
  ASSERT_TRUE(reply->has_value());
  ASSERT_THAT(**reply, IsOk());
  EXPECT_EQ((*reply)->value().kv().key(), "nccl/id");
  EXPECT_EQ((*reply)->value().kv().value(), "42");
}

TEST_F(KvRouterTest, GetKeyValueDir_NestedDirectory_ListsEverythingUnderIt) {
  auto router = SpawnRouter();
  for (const char* key : {"dir/1", "dir/2/a", "dir/2/b/c"}) Insert(router, key);
  EXPECT_THAT(ListKeys(router, "dir"), ElementsAre("dir/1", "dir/2/a", "dir/2/b/c"));
  EXPECT_THAT(ListKeys(router, "/dir/2/"), ElementsAre("dir/2/a", "dir/2/b/c"));
}

TEST_F(KvRouterTest, GetKeyValueDir_WrongDirectory_Empty) {
  auto router = SpawnRouter();
  Insert(router, "dir/path");
  EXPECT_THAT(ListKeys(router, "wrong_dir"), IsEmpty());
}

TEST_F(KvRouterTest, GetKeyValueDir_WrongDirectoryPrefix_Empty) {
  auto router = SpawnRouter();
  Insert(router, "wrong_dir/dir/path");
  Insert(router, "dir0/x");
  EXPECT_THAT(ListKeys(router, "dir"), IsEmpty());
}

TEST_F(KvRouterTest, GetKeyValueDir_NonDirectoryPrefix_Empty) {
  auto router = SpawnRouter();
  Insert(router, "dir_key");
  EXPECT_THAT(ListKeys(router, "dir"), IsEmpty());
}

TEST_F(KvRouterTest, GetKeyValueDir_KeyEqualToDirectoryName_NotListed) {
  auto router = SpawnRouter();
  Insert(router, "dir");
  EXPECT_THAT(ListKeys(router, "dir"), IsEmpty());
}

TEST_F(KvRouterTest, GetKeyValueDir_Root_EveryKeyOfEveryDirectoryInKeyOrder) {
  auto router = SpawnRouter();
  for (const char* key : {"b/x", "a/y", "a", "a-b/z", "c"}) Insert(router, key);
  EXPECT_THAT(ListKeys(router, ""), ElementsAre("a", "a-b/z", "a/y", "b/x", "c"));
  EXPECT_THAT(ListKeys(router, "///"), ElementsAre("a", "a-b/z", "a/y", "b/x", "c"));
}

TEST_F(KvRouterTest, GetKeyValueDir_RootWithoutDirectories_Empty) {
  auto router = SpawnRouter();
  EXPECT_THAT(ListKeys(router, "/"), IsEmpty());
}

TEST_F(KvRouterTest, DeleteKeyValue_RootDirectoryWithoutDeleteRoot_FailedPreconditionKeptAll) {
  auto router = SpawnRouter();
  for (const char* key : {"a", "a/x"}) Insert(router, key);
  EXPECT_THAT(Call<proto::DeleteKeyValueResponse>(router, DeleteRequest("/", true)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("set delete_root")));
  EXPECT_THAT(ListKeys(router, ""), ElementsAre("a", "a/x"));
}

TEST_F(KvRouterTest, DeleteKeyValue_RootDirectoryWithDeleteRoot_DeletesEverything) {
  auto router = SpawnRouter();
  for (const char* key : {"a", "a/x", "b/y/z"}) Insert(router, key);
  proto::DeleteKeyValueRequest everything = DeleteRequest("/", true);
  everything.set_delete_root(true);
  ASSERT_THAT(Call<proto::DeleteKeyValueResponse>(router, everything), IsOk());
  EXPECT_THAT(ListKeys(router, ""), IsEmpty());
  EXPECT_THAT(Call<proto::TryGetKeyValueResponse>(router, TryGetRequest("a")),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(KvRouterTest, DeleteKeyValue_RootNotDirectory_InvalidArgumentAndNothingDeleted) {
  auto router = SpawnRouter();
  Insert(router, "a/x");
  EXPECT_THAT(Call<proto::DeleteKeyValueResponse>(router, DeleteRequest("", false)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("muster kv rm -r --all /")));
  EXPECT_THAT(ListKeys(router, ""), ElementsAre("a/x"));
}

TEST_F(KvRouterTest, WatchKey_Root_InvalidArgument) {
  auto router = SpawnRouter();
  auto watcher =
      Keep(SpawnWatcher(system_, std::make_shared<std::vector<proto::KeyValueChangeEvent>>()));
  EXPECT_THAT(Call<proto::WatchKeyResponse>(router, WatchRequest("/"), watcher),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("watch a key or a directory, not the root")));
}

TEST_F(KvRouterTest, RoutedWatch_UnnormalisedDirectory_SeesChangesUnderIt) {
  auto router = SpawnRouter();
  auto log = std::make_shared<std::vector<proto::KeyValueChangeEvent>>();
  auto watcher = Keep(SpawnWatcher(system_, log));
  ASSERT_THAT(Call<proto::WatchKeyResponse>(router, WatchRequest("//nccl/"), watcher), IsOk());
  Insert(router, "nccl/id/0");
  ASSERT_EQ(log->size(), 1u);
  EXPECT_EQ(log->at(0).key(), "nccl/id/0");
  EXPECT_EQ(log->at(0).watched_key(), "nccl");
}

TEST_F(KvRouterTest, RoutedReduceOrWaitForKeysOfTheRoot_InvalidArgumentNothingSpawned) {
  auto router = SpawnRouter();
  EXPECT_THAT(
      Call<proto::ReduceKeyValueDirResponse>(router, ReduceRequest("/", proto::REDUCE_MAX)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ReduceKeyValueDir of the root")));
  EXPECT_THAT(Call<proto::WaitForKeysResponse>(router, WaitForKeysRequest("", 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("WaitForKeys of the root")));
  EXPECT_THAT(Call<proto::WaitForKeysResponse>(router, WaitForKeysRequest("ranks", 0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("asks for 0 keys")));
  EXPECT_THAT(Call<proto::WaitForKeysResponse>(router, WaitForKeysRequest("ranks", 1, -5)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a timeout of -5 ms")));
  EXPECT_THAT(spawned_, IsEmpty());
}

TEST_F(KvRouterTest, RoutedWaitForKeys_UnnormalisedDirectory_AnsweredByRoutedInserts) {
  auto router = SpawnRouter();
  auto reply = Send<proto::WaitForKeysResponse>(router, WaitForKeysRequest("//ranks/", 2));
  Insert(router, "ranks/1");
  EXPECT_FALSE(reply->has_value());
  Insert(router, "rank/0");  // another directory
  EXPECT_FALSE(reply->has_value());
  Insert(router, "//ranks//0");
  ASSERT_TRUE(reply->has_value());
  ASSERT_THAT(**reply, IsOk());
  EXPECT_EQ((*reply)->value().directory_key(), "ranks");
  EXPECT_THAT(Keys((*reply)->value()), ElementsAre("ranks/0", "ranks/1"));
}

TEST_F(KvRouterTest, RoutedReduce_SumOfANestedDirectory) {
  auto router = SpawnRouter();
  for (auto [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"steps/job/0", "10"}, {"steps/job/1", "32"}, {"steps/other", "1000"}}) {
    ASSERT_THAT(Call<proto::InsertKeyValueResponse>(router, InsertRequest(key, value)), IsOk());
  }
  auto reply = Call<proto::ReduceKeyValueDirResponse>(
      router, ReduceRequest("/steps//job", proto::REDUCE_SUM));
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->value(), 42);
  EXPECT_EQ(reply->count(), 2);
  EXPECT_THAT(
      Call<proto::ReduceKeyValueDirResponse>(router, ReduceRequest("nothing", proto::REDUCE_SUM)),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("no keys under nothing")));
}

TEST_F(KvRouterTest, Cancel_UnnormalisedKeyFromRequester_CancelsItsRoutedGet) {
  auto router = SpawnRouter();
  std::vector<GetReply> replies;
  auto getter = Keep(SpawnGetter(system_, router, {GetRequest("a/b")}, replies));
  Drain();
  caf::anon_send(getter, cancel_atom::value, std::string("//a//b"));
  Drain();
  ASSERT_TRUE(replies[0]->has_value());
  EXPECT_THAT(**replies[0], StatusIs(absl::StatusCode::kCancelled, HasSubstr("a/b")));
}

TEST_F(KvRouterTest, DirectoryGoesDown_NextRequestSpawnsAFreshOne) {
  auto router = SpawnRouter();
  Insert(router, "a/x");
  caf::anon_send_exit(directories_.at(0), caf::exit_reason::user_shutdown);
  Drain();
  EXPECT_THAT(Call<proto::TryGetKeyValueResponse>(router, TryGetRequest("a/x")),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(spawned_, ElementsAre("a", "a"));
}

TEST_F(KvRouterTest, TenThousandGetsOverManyDirectories_EachReleasedWithItsOwnValue) {
  constexpr int kKeys = 10000;
  auto router = SpawnRouter();
  auto key = [](int i) { return absl::StrCat("dir", i % 100, "/k", i); };
  std::vector<proto::GetKeyValueRequest> requests;
  for (int i = 0; i < kKeys; ++i) requests.push_back(GetRequest(key(i)));
  std::vector<GetReply> replies;
  Keep(SpawnGetter(system_, router, requests, replies));
  Drain();
  for (int i = 0; i < kKeys; ++i) caf::anon_send(router, InsertRequest(key(i), absl::StrCat(i)));
  Drain();
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(replies[i]->has_value()) << i;
    ASSERT_THAT(**replies[i], IsOk());
    ASSERT_EQ((*replies[i])->value().kv().key(), key(i));
    ASSERT_EQ((*replies[i])->value().kv().value(), absl::StrCat(i));
  }
  EXPECT_EQ(spawned_.size(), 100u);
}

}  // namespace
}  // namespace muster
