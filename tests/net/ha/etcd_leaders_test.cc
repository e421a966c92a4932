// Finding an HA job's leaders from etcd (etcd://ENDPOINTS/NAME): every candidate registers its
// address with its lease, the active one comes first, and a resigned one is gone.
#include "muster/net/ha/etcd_leaders.h"

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

class EtcdLeadersTest : public testing::SharedEtcdTest {};

TEST_F(EtcdLeadersTest, ActiveFirstThenStandbys_AResignedOneIsGone) {
  EXPECT_THAT(ReadHaLeaders(*etcd_, name_, absl::Seconds(5)),
              StatusIs(Code::kNotFound, HasSubstr("no leader of HA job " + name_)));
  EtcdElection b(etcd_, name_, "host-b:7400", 10);
  EtcdElection a(etcd_, name_, "host-a:7400", 10);
  EtcdElection c(etcd_, name_, "host-c:7400", 10);
  ASSERT_THAT(b.Campaign(), IsOk());  // b wins
  ASSERT_THAT(a.Campaign(), IsOk());
  ASSERT_THAT(c.Campaign(), IsOk());
  EXPECT_THAT(ReadHaLeaders(*etcd_, name_, absl::Seconds(5)),
              IsOkAndHolds(ElementsAre("host-b:7400", "host-a:7400", "host-c:7400")));
  b.Resign();
  auto claim = c.Campaign();
  ASSERT_THAT(claim, IsOk());
  ASSERT_TRUE(c.won(*claim));
  EXPECT_THAT(ReadHaLeaders(*etcd_, name_, absl::Seconds(5)),
              IsOkAndHolds(ElementsAre("host-c:7400", "host-a:7400")));
  // Through the URL, as the muster command reads it.
  EXPECT_THAT(ResolveEtcdLeaders(absl::StrCat("etcd://", cluster_->endpoints(), "/", name_),
                                 absl::Seconds(5)),
              IsOkAndHolds(ElementsAre("host-c:7400", "host-a:7400")));
  EXPECT_THAT(ResolveEtcdLeaders("etcd://127.0.0.1:1/" + name_, absl::Seconds(1)),
              StatusIs(Code::kUnavailable, HasSubstr("cannot read the leaders of etcd://")));
}

}  // namespace
}  // namespace muster
