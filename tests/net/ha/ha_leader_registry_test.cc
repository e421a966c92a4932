// Finding an HA job's leaders from etcd (etcd://ENDPOINTS/NAME), as agents and the muster
// command do, through etcd's JSON gateway: every candidate registers its address with its
// lease, the active one comes first, and a resigned one is gone.
#include "muster/net/agent/session/etcd/ha_leader_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/net/ha/etcd_election.h"
#include "tests/net/ha/etcd_cluster.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::IsOkAndHolds;
using ::muster::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

TEST(EtcdLeaderUrlTest, EndpointsThenTheHaName) {
  auto url = ParseEtcdLeaderUrl("etcd://e1:2379,e2:2379/train-7");
  ASSERT_THAT(url, IsOk());
  EXPECT_THAT(url->endpoints, ElementsAre("e1:2379", "e2:2379"));
  EXPECT_EQ(url->name, "train-7");
  for (const char* bad : {"e1:2379/train-7", "etcd://e1:2379", "etcd://e1:2379/", "etcd:///j"}) {
    EXPECT_THAT(ParseEtcdLeaderUrl(bad),
                StatusIs(Code::kInvalidArgument, HasSubstr("etcd://HOST:PORT[,HOST:PORT...]/NAME")))
        << bad;
  }
  EXPECT_THAT(ParseEtcdLeaderUrl("etcd://e1/j"),
              StatusIs(Code::kInvalidArgument, HasSubstr("not HOST:PORT")));
  EXPECT_THAT(ParseEtcdLeaderUrl("etcd://e1:2379/a b"), StatusIs(Code::kInvalidArgument));
}

TEST(OrderHaLeadersTest, ActiveFirstThenTheOthersInAddressOrder_NoneIsNotFound) {
  EXPECT_THAT(OrderHaLeaders({"c:1", "a:1", "b:1"}, "b:1", "j", "e:2379"),
              IsOkAndHolds(ElementsAre("b:1", "a:1", "c:1")));
  EXPECT_THAT(OrderHaLeaders({"c:1", "a:1"}, std::nullopt, "j", "e:2379"),
              IsOkAndHolds(ElementsAre("a:1", "c:1")));
  // Active, its registration not seen yet (another revision): still first.
  EXPECT_THAT(OrderHaLeaders({"c:1"}, "a:1", "j", "e:2379"),
              IsOkAndHolds(ElementsAre("a:1", "c:1")));
  EXPECT_THAT(OrderHaLeaders({}, std::nullopt, "j", "e:2379"),
              StatusIs(Code::kNotFound, HasSubstr("no leader of HA job j is registered in etcd at "
                                                  "e:2379: start one (muster serve --ha-etcd")));
}

class HaLeaderRegistryTest : public testing::SharedEtcdTest {
 protected:
  absl::StatusOr<std::vector<std::string>> Read() {
    return ReadHaLeadersThroughGateway(absl::StrCat("etcd://", cluster_->endpoints(), "/", name_),
                                       absl::Seconds(5));
  }
};

TEST_F(HaLeaderRegistryTest, ActiveFirstThenStandbys_AResignedOneIsGone) {
  EXPECT_THAT(Read(), StatusIs(Code::kNotFound, HasSubstr("no leader of HA job " + name_)));
  EtcdElection b(etcd_, name_, "host-b:7400", 10);
  EtcdElection a(etcd_, name_, "host-a:7400", 10);
  EtcdElection c(etcd_, name_, "host-c:7400", 10);
  ASSERT_THAT(b.Campaign(), IsOk());  // b wins
  ASSERT_THAT(a.Campaign(), IsOk());
  ASSERT_THAT(c.Campaign(), IsOk());
  EXPECT_THAT(Read(), IsOkAndHolds(ElementsAre("host-b:7400", "host-a:7400", "host-c:7400")));
  b.Resign();
  auto claim = c.Campaign();
  ASSERT_THAT(claim, IsOk());
  ASSERT_TRUE(c.won(*claim));
  EXPECT_THAT(Read(), IsOkAndHolds(ElementsAre("host-c:7400", "host-a:7400")));
}

TEST_F(HaLeaderRegistryTest, AMemberDown_TheNextAnswers_NoneUp_UnavailableNamingTheUrl) {
  EtcdElection a(etcd_, name_, "host-a:7400", 10);
  ASSERT_THAT(a.Campaign(), IsOk());
  // A member where nothing listens, first: the next one answers.
  EXPECT_THAT(
      ReadHaLeadersThroughGateway(
          absl::StrCat("etcd://127.0.0.1:1,", cluster_->endpoints(), "/", name_), absl::Seconds(5)),
      IsOkAndHolds(ElementsAre("host-a:7400")));
  const absl::Time start = absl::Now();
  EXPECT_THAT(
      ReadHaLeadersThroughGateway("etcd://127.0.0.1:1/" + name_, absl::Seconds(1)),
      StatusIs(Code::kUnavailable, HasSubstr("cannot read the leaders of etcd://127.0.0.1:1/" +
                                             name_ + ": no etcd member answered within 1s")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_THAT(ReadHaLeadersThroughGateway("etcd://127.0.0.1:1", absl::Seconds(1)),
              StatusIs(Code::kInvalidArgument));
}

}  // namespace
}  // namespace muster
