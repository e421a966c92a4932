// LeaderAddresses: an HA job's leaders tried in turn, a standby's lead followed, a pause after
// each round that failed; ParseLeaderAddress's forms.
#include "muster/net/agent/session/leader_addresses.h"

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOkAndHolds;
using ::muster::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(ParseLeaderAddressTest, HostPortAndBracketedIpv6) {
  EXPECT_THAT(ParseLeaderAddress("h1:7400"), IsOkAndHolds(Pair("h1", 7400)));
  EXPECT_THAT(ParseLeaderAddress("[::1]:7400"), IsOkAndHolds(Pair("::1", 7400)));
  EXPECT_THAT(ParseLeaderAddress("h1"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected HOST:PORT")));
  EXPECT_THAT(ParseLeaderAddress(":7400"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseLeaderAddress("h1:70000"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(LeaderAddressesTest, OneAddress_IsNotSeveral) {
  LeaderAddresses one("h1", 1, {});
  EXPECT_FALSE(one.several());
  EXPECT_EQ(one.current(), "h1:1");
  EXPECT_TRUE(one.Next());  // a round of one
  EXPECT_EQ(one.current(), "h1:1");
}

TEST(LeaderAddressesTest, Several_TriedInTurnWithAPauseAfterEachFailedRound) {
  LeaderAddresses three("h1", 1, {"h2:2", "h3:3"});
  EXPECT_TRUE(three.several());
  EXPECT_EQ(three.all(), "h1:1, h2:2, h3:3");
  EXPECT_FALSE(three.Next());
  EXPECT_EQ(three.current(), "h2:2");
  EXPECT_FALSE(three.Next());
  EXPECT_EQ(three.current(), "h3:3");
  EXPECT_TRUE(three.Next());  // all three failed: pause
  EXPECT_EQ(three.current(), "h1:1");
  three.Reached();
  EXPECT_FALSE(three.Next());
}

TEST(LeaderAddressesTest, Follow_GoesToTheNamedLeaderAndAddsAnUnknownOne) {
  LeaderAddresses two("h1", 1, {"h2:2"});
  EXPECT_FALSE(two.Follow("h2:2"));
  EXPECT_EQ(two.current(), "h2:2");
  EXPECT_FALSE(two.Follow("h9:9"));  // advertised under another name
  EXPECT_EQ(two.current(), "h9:9");
  EXPECT_EQ(two.all(), "h1:1, h2:2, h9:9");
  // Three leads without success make a round: time to pause.
  EXPECT_TRUE(two.Follow("h1:1"));
  EXPECT_EQ(two.current(), "h1:1");
}

TEST(LeaderAddressesTest, Follow_ToItselfOrToNothingIsTheNextAddress) {
  LeaderAddresses two("h1", 1, {"h2:2"});
  EXPECT_FALSE(two.Follow("h1:1"));  // a restarted leader naming its own old key
  EXPECT_EQ(two.current(), "h2:2");
  EXPECT_TRUE(two.Follow("not an address"));
  EXPECT_EQ(two.current(), "h1:1");
}

TEST(LeaderAddressesTest, LeadersThatNameEachOther_PauseEveryRound) {
  LeaderAddresses two("a", 1, {"b:1"});
  int pauses = 0;
  for (int i = 0; i < 10; ++i) pauses += two.Follow(two.current() == "a:1" ? "b:1" : "a:1");
  EXPECT_EQ(pauses, 5);
}

TEST(LeaderAddressesTest, Follow_StopsAddingAtTheBound) {
  LeaderAddresses many("h0", 1, {});
  for (int i = 1; i < 40; ++i) many.Follow(absl::StrCat("h", i, ":1"));
  size_t commas = 0;
  for (char c : many.all()) commas += c == ',';
  EXPECT_EQ(commas + 1, LeaderAddresses::kMax);
}

TEST(LeaderAddressesTest, Add_KeepsTheCurrentAndSkipsKnownMalformedAndOverTheBound) {
  LeaderAddresses one("h1", 1, {});
  EXPECT_TRUE(one.Add("h2:2"));  // a leader registered since
  EXPECT_FALSE(one.Add("h1:1"));
  EXPECT_FALSE(one.Add("h2:2"));
  EXPECT_FALSE(one.Add("not an address"));
  EXPECT_FALSE(one.Add("h3:0"));
  EXPECT_TRUE(one.several());
  EXPECT_EQ(one.current(), "h1:1");
  EXPECT_EQ(one.all(), "h1:1, h2:2");
  // The next round reaches it.
  EXPECT_FALSE(one.Next());
  EXPECT_EQ(one.current(), "h2:2");
  for (int i = 3; i < 40; ++i) one.Add(absl::StrCat("h", i, ":1"));
  size_t commas = 0;
  for (char c : one.all()) commas += c == ',';
  EXPECT_EQ(commas + 1, LeaderAddresses::kMax);
}

}  // namespace
}  // namespace muster
