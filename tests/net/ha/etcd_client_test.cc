// EtcdClient against a real 3-member etcd cluster: the calls the election and the state use,
// a member's death, and etcd that is not there.
#include "muster/net/ha/etcd_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/net/ha/etcd_cluster.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::EtcdCluster;
using ::muster::testing::IsOk;
using ::muster::testing::IsOkAndHolds;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

TEST(EtcdEndpointsTest, ParsesListsAndRefusesWhatItCannotUse) {
  EXPECT_THAT(ParseEtcdEndpoints("127.0.0.1:2379, http://h2:2380,"),
              IsOkAndHolds(ElementsAre("127.0.0.1:2379", "h2:2380")));
  EXPECT_THAT(ParseEtcdEndpoints(""), StatusIs(Code::kInvalidArgument, HasSubstr("no etcd")));
  EXPECT_THAT(ParseEtcdEndpoints("h1"),
              StatusIs(Code::kInvalidArgument, HasSubstr("\"h1\" is not HOST:PORT")));
  EXPECT_THAT(ParseEtcdEndpoints("h1:0"), StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(ParseEtcdEndpoints("h1:99999"), StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(ParseEtcdEndpoints("https://h1:2379"),
              StatusIs(Code::kInvalidArgument, HasSubstr("TLS to etcd is not supported")));
}

TEST(EtcdClientTest, NothingListening_ConnectFailsNamingTheEndpoints) {
  // Port 1 on loopback: nobody listens, connections are refused.
  auto client =
      EtcdClient::Connect({.endpoints = {"127.0.0.1:1", "127.0.0.1:2"}}, absl::Milliseconds(300));
  EXPECT_THAT(client,
              StatusIs(Code::kUnavailable,
                       AllOf(HasSubstr("no etcd member answered at 127.0.0.1:1,127.0.0.1:2"),
                             HasSubstr("--ha-etcd"))));
}

class EtcdClusterTest : public testing::EtcdTest {
 protected:
  absl::Status Put(const std::string& key, const std::string& value, absl::Duration timeout) {
    etcdserverpb::TxnRequest txn;
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(value);
    return etcd_->Txn(txn, timeout).status();
  }

  std::string Get(const std::string& key) {
    etcdserverpb::RangeRequest read;
    read.set_key(key);
    auto found = etcd_->Range(read, absl::Seconds(5));
    EXPECT_THAT(found, IsOk());
    return found.ok() && found->kvs_size() == 1 ? found->kvs(0).value() : "<none>";
  }
};

TEST_F(EtcdClusterTest, WritesAndReadsThroughAnyMember) {
  ASSERT_THAT(Put("a", "1", absl::Seconds(5)), IsOk());
  EXPECT_EQ(Get("a"), "1");
}

TEST_F(EtcdClusterTest, OneMemberKilled_CallsGoToTheOthers) {
  ASSERT_THAT(Put("a", "1", absl::Seconds(5)), IsOk());
  for (int member = 0; member < 3; ++member) {
    cluster_->Kill(member);
    EXPECT_THAT(Put("a", absl::StrCat("without m", member), absl::Seconds(5)), IsOk());
    EXPECT_EQ(Get("a"), absl::StrCat("without m", member));
    ASSERT_THAT(cluster_->Restart(member), IsOk());
  }
}

TEST_F(EtcdClusterTest, TwoMembersKilled_WritesWaitThenFailUnavailableAndResumeWithAQuorum) {
  cluster_->Kill(0);
  cluster_->Kill(1);
  EXPECT_THAT(Put("a", "no quorum", absl::Milliseconds(1500)),
              StatusIs(Code::kUnavailable, HasSubstr("answered the transaction within")));
  ASSERT_THAT(cluster_->Restart(1), IsOk());
  EXPECT_THAT(Put("a", "quorum again", absl::Seconds(15)), IsOk());
  EXPECT_EQ(Get("a"), "quorum again");
}

TEST_F(EtcdClusterTest, Lease_KeptAliveThenRevoked) {
  auto lease = etcd_->LeaseGrant(5, absl::Seconds(5));
  ASSERT_THAT(lease, IsOk());
  EXPECT_EQ(lease->ttl(), 5);
  EXPECT_THAT(etcd_->LeaseKeepAliveOnce(lease->id(), absl::Seconds(5)), IsOkAndHolds(5));
  ASSERT_THAT(etcd_->LeaseRevoke(lease->id(), absl::Seconds(5)), IsOk());
  EXPECT_THAT(etcd_->LeaseKeepAliveOnce(lease->id(), absl::Seconds(5)),
              StatusIs(Code::kNotFound, HasSubstr("is gone")));
}

}  // namespace
}  // namespace muster
