// The key-value store behind the coordinator: requests are routed to directory actors, blocked
// gets are released by inserts, and root-spanning reads see every directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/actors/leader_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using ::testing::HasSubstr;
using Code = absl::StatusCode;

proto::InsertKeyValueRequest Insert(const std::string& key, const std::string& value) {
  proto::InsertKeyValueRequest request;
  request.mutable_kv()->set_key(key);
  request.mutable_kv()->set_value(value);
  return request;
}

TEST_F(LeaderTest, Kv_BlockingGetReleasedByInsertInAnotherForm) {
  Spawn(Config(1));
  proto::GetKeyValueRequest get;
  get.set_key("nccl/unique_id");
  auto reply = Send<proto::GetKeyValueResponse>(leader_, get);
  EXPECT_FALSE(reply->has_value());
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, Insert("//nccl//unique_id/", "abc")),
              IsOk());
  ASSERT_TRUE(reply->has_value());
  ASSERT_THAT(**reply, IsOk());
  EXPECT_EQ((*reply)->value().kv().value(), "abc");
}

TEST_F(LeaderTest, Kv_GetDeadline_DeadlineExceededNamingTheKey) {
  Spawn(Config(1));
  proto::GetKeyValueRequest get;
  get.set_key("topology/0");
  get.set_timeout_in_ms(500);
  auto reply = Send<proto::GetKeyValueResponse>(leader_, get);
  AdvanceTime(499ms);
  EXPECT_FALSE(reply->has_value());
  AdvanceTime(1ms);
  ASSERT_TRUE(reply->has_value());
  EXPECT_THAT(**reply, StatusIs(Code::kDeadlineExceeded, HasSubstr("topology/0")));
}

TEST_F(LeaderTest, Kv_RootListingSpansDirectoriesInOrder) {
  Spawn(Config(1));
  for (const char* key : {"b/x", "a/y", "a", "c/z/w"}) {
    ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, Insert(key, "v")), IsOk());
  }
  proto::GetKeyValueDirRequest dir;
  dir.set_directory_key("/");
  auto reply = Call<proto::GetKeyValueDirResponse>(leader_, dir);
  ASSERT_THAT(reply, IsOk());
  std::vector<std::string> keys;
  for (const auto& kv : reply->kv()) keys.push_back(kv.key());
  EXPECT_THAT(keys, ::testing::ElementsAre("a", "a/y", "b/x", "c/z/w"));
}

TEST_F(LeaderTest, Kv_DeleteRootWithoutDeleteRoot_FailedPreconditionNothingDeleted) {
  Spawn(Config(1));
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, Insert("a/x", "v")), IsOk());
  proto::DeleteKeyValueRequest everything;
  everything.set_key("/");
  everything.set_is_directory(true);
  EXPECT_THAT(Call<proto::DeleteKeyValueResponse>(leader_, everything),
              StatusIs(Code::kFailedPrecondition, ::testing::HasSubstr("delete_root")));
  proto::TryGetKeyValueRequest get;
  get.set_key("a/x");
  EXPECT_THAT(Call<proto::TryGetKeyValueResponse>(leader_, get), IsOk());
  everything.set_delete_root(true);
  ASSERT_THAT(Call<proto::DeleteKeyValueResponse>(leader_, everything), IsOk());
  EXPECT_THAT(Call<proto::TryGetKeyValueResponse>(leader_, get), StatusIs(Code::kNotFound));
}

TEST_F(LeaderTest, Kv_EmptyKey_InvalidArgument) {
  Spawn(Config(1));
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(leader_, Insert("///", "v")),
              StatusIs(Code::kInvalidArgument));
}

}  // namespace
}  // namespace muster::testing
