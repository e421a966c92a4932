// EtcdElection against a real 3-member etcd cluster: one winner, standbys that know it, the
// fence that ends with the lease, and a takeover after the holder stops refreshing.
#include "muster/net/ha/etcd_election.h"

#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/net/ha/etcd_state_store.h"
#include "tests/net/ha/etcd_cluster.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::EtcdCluster;
using ::muster::testing::IsOk;
using ::muster::testing::IsOkAndHolds;
using ::muster::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

TEST(HaNameTest, NamesAreBounded) {
  EXPECT_THAT(CheckHaName("train-7_b.1"), IsOk());
  EXPECT_THAT(CheckHaName(""), StatusIs(Code::kInvalidArgument, HasSubstr("1 to 128")));
  EXPECT_THAT(CheckHaName("a/b"), StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(CheckHaName(std::string(129, 'a')), StatusIs(Code::kInvalidArgument));
  EXPECT_EQ(HaLeaderKey("j"), "muster/j/leader");
  EXPECT_EQ(HaStatePrefix("j"), "muster/j/state/");
  EXPECT_EQ(PrefixEnd("muster/j/state/"), "muster/j/state0");
  EXPECT_EQ(PrefixEnd(std::string("a\xff", 2)), "b");
}

class EtcdElectionTest : public testing::EtcdTest {
 protected:
  // A write fenced on `claim` of `election`.
  absl::Status FencedWrite(const EtcdElection& election, const LeaderClaim& claim,
                           const std::string& value) {
    auto store = EtcdStateStore::Open(
        etcd_, {.name = "job", .fence = election.Fence(claim), .write_timeout = absl::Seconds(5)});
    StateBatch batch;
    batch.Put("k/d/x", value);
    return store->Write(batch);
  }
};

TEST_F(EtcdElectionTest, OneWins_TheOtherSeesItAndTakesOverWhenItResigns) {
  EtcdElection a(etcd_, "job", "host-a:7400", 2);
  EtcdElection b(etcd_, "job", "host-b:7400", 2);
  auto a_claim = a.Campaign();
  ASSERT_THAT(a_claim, IsOk());
  EXPECT_TRUE(a.won(*a_claim));
  EXPECT_EQ(a_claim->holder, "host-a:7400");
  auto b_claim = b.Campaign();
  ASSERT_THAT(b_claim, IsOk());
  EXPECT_FALSE(b.won(*b_claim));
  EXPECT_EQ(b_claim->holder, "host-a:7400");
  EXPECT_EQ(b_claim->create_revision, a_claim->create_revision);
  // A campaign again of the holder keeps what it has.
  auto again = a.Campaign();
  ASSERT_THAT(again, IsOk());
  EXPECT_TRUE(a.won(*again));
  EXPECT_EQ(again->create_revision, a_claim->create_revision);
  EXPECT_THAT(FencedWrite(a, *a_claim, "from a"), IsOk());

  a.Resign();
  auto b_won = b.Campaign();
  ASSERT_THAT(b_won, IsOk());
  EXPECT_TRUE(b.won(*b_won));
  EXPECT_THAT(b.Holder(), IsOkAndHolds(::testing::Field(&LeaderClaim::holder, "host-b:7400")));
  // The old holder's writes are refused from now on; the new one's pass.
  EXPECT_THAT(
      FencedWrite(a, *a_claim, "late from a"),
      StatusIs(Code::kFailedPrecondition, HasSubstr("no longer the active leader of HA job job")));
  EXPECT_THAT(FencedWrite(b, *b_won, "from b"), IsOk());
}

TEST_F(EtcdElectionTest, HolderStopsRefreshing_ItsLeaseEndsAndAStandbyTakesOver) {
  EtcdElection a(etcd_, "job", "host-a:7400", 2);
  EtcdElection b(etcd_, "job", "host-b:7400", 2);
  auto a_claim = a.Campaign();
  ASSERT_THAT(a_claim, IsOk());
  ASSERT_TRUE(a.won(*a_claim));
  EXPECT_THAT(a.KeepAlive(), IsOk());
  EXPECT_GT(a.lease_deadline(), absl::Now());
  // a stops refreshing (its host died): b campaigns until it wins.
  const absl::Time stopped = absl::Now();
  absl::StatusOr<LeaderClaim> b_claim;
  while (absl::Now() - stopped < absl::Seconds(10)) {
    b_claim = b.Campaign();
    ASSERT_THAT(b_claim, IsOk());
    if (b.won(*b_claim)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(b.won(*b_claim)) << "still held by " << b_claim->holder;
  const absl::Duration took = absl::Now() - stopped;
  EXPECT_GE(took, absl::Milliseconds(1500)) << "the lease ended before its TTL";
  EXPECT_LT(took, absl::Seconds(5));
  EXPECT_THAT(a.KeepAlive(), StatusIs(Code::kNotFound, HasSubstr("expired")));
  EXPECT_THAT(FencedWrite(a, *a_claim, "late from a"), StatusIs(Code::kFailedPrecondition));
}

TEST_F(EtcdElectionTest, OneEtcdMemberDown_TheElectionGoesOn) {
  cluster_->Kill(0);
  EtcdElection a(etcd_, "job", "host-a:7400", 2);
  // If the killed member led etcd's raft, the other two elect a new one first (heavily loaded
  // hosts can take longer than a campaign's 2 s): until then a campaign is UNAVAILABLE, and the
  // candidate campaigns again, as HaLeader does.
  absl::StatusOr<LeaderClaim> claim = a.Campaign();
  const absl::Time first = absl::Now();
  while (!claim.ok() && absl::Now() - first < absl::Seconds(15)) {
    EXPECT_THAT(claim, StatusIs(Code::kUnavailable, HasSubstr("no etcd member")));
    claim = a.Campaign();
  }
  ASSERT_THAT(claim, IsOk());
  EXPECT_TRUE(a.won(*claim));
  EXPECT_THAT(a.KeepAlive(), IsOk());
  EXPECT_THAT(FencedWrite(a, *claim, "v"), IsOk());
}

}  // namespace
}  // namespace muster
