// EtcdClient against a real 3-member etcd cluster, over gRPC and through etcd's JSON gateway:
// the calls the election and the state use, a member's death, a lost quorum, etcd's own errors,
// and etcd that is not there.
#include "muster/net/ha/etcd/etcd_client.h"

#include "muster/net/ha/etcd/etcd_gateway_member.h"

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
  EXPECT_THAT(ParseEtcdEndpoints("https://h1:2379,https://h2:2379"),
              IsOkAndHolds(ElementsAre("h1:2379", "h2:2379")));
  EXPECT_TRUE(EtcdEndpointsUseTls(" https://h1:2379,https://h2:2379"));
  EXPECT_FALSE(EtcdEndpointsUseTls("h1:2379"));
  EXPECT_THAT(ParseEtcdEndpoints("https://h1:2379,http://h2:2379"),
              StatusIs(Code::kInvalidArgument, HasSubstr("mix https:// with http://")));
}

// How a test's client reaches the members.
enum class Transport { kGrpc, kGateway };

EtcdMemberFactory MemberOf(Transport transport) {
  return transport == Transport::kGrpc ? EtcdMemberFactory(NewEtcdGrpcMember)
                                       : EtcdMemberFactory(NewEtcdGatewayMember);
}

std::string TransportName(const ::testing::TestParamInfo<Transport>& info) {
  return info.param == Transport::kGrpc ? "Grpc" : "Gateway";
}

class EtcdClientTest : public ::testing::TestWithParam<Transport> {};

TEST_P(EtcdClientTest, NothingListening_ConnectFailsNamingTheEndpoints) {
  // Port 1 on loopback: nobody listens, connections are refused.
  auto client = EtcdClient::Connect(
      {.endpoints = {"127.0.0.1:1", "127.0.0.1:2"}, .member = MemberOf(GetParam())},
      absl::Milliseconds(300));
  EXPECT_THAT(client,
              StatusIs(Code::kUnavailable,
                       AllOf(HasSubstr("no etcd member answered at 127.0.0.1:1,127.0.0.1:2"),
                             HasSubstr("--ha-etcd"))));
}

INSTANTIATE_TEST_SUITE_P(Transports, EtcdClientTest,
                         ::testing::Values(Transport::kGrpc, Transport::kGateway), TransportName);

class EtcdClusterTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    auto cluster = EtcdCluster::Start();
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
    auto client = cluster_->Client(MemberOf(GetParam()));
    ASSERT_TRUE(client.ok()) << client.status();
    etcd_ = *std::move(client);
  }

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

  std::unique_ptr<EtcdCluster> cluster_;
  std::shared_ptr<EtcdClient> etcd_;
};

INSTANTIATE_TEST_SUITE_P(Transports, EtcdClusterTest,
                         ::testing::Values(Transport::kGrpc, Transport::kGateway), TransportName);

TEST_P(EtcdClusterTest, WritesAndReadsThroughAnyMember) {
  ASSERT_THAT(Put("a", "1", absl::Seconds(5)), IsOk());
  EXPECT_EQ(Get("a"), "1");
}

TEST_P(EtcdClusterTest, OneMemberKilled_CallsGoToTheOthers) {
  ASSERT_THAT(Put("a", "1", absl::Seconds(5)), IsOk());
  for (int member = 0; member < 3; ++member) {
    cluster_->Kill(member);
    EXPECT_THAT(Put("a", absl::StrCat("without m", member), absl::Seconds(5)), IsOk());
    EXPECT_EQ(Get("a"), absl::StrCat("without m", member));
    ASSERT_THAT(cluster_->Restart(member), IsOk());
  }
}

TEST_P(EtcdClusterTest, TwoMembersKilled_WritesWaitThenFailUnavailableAndResumeWithAQuorum) {
  cluster_->Kill(0);
  cluster_->Kill(1);
  EXPECT_THAT(Put("a", "no quorum", absl::Milliseconds(1500)),
              StatusIs(Code::kUnavailable, HasSubstr("answered the transaction within")));
  ASSERT_THAT(cluster_->Restart(1), IsOk());
  EXPECT_THAT(Put("a", "quorum again", absl::Seconds(15)), IsOk());
  EXPECT_EQ(Get("a"), "quorum again");
}

TEST_P(EtcdClusterTest, Lease_KeptAliveThenRevoked) {
  auto lease = etcd_->LeaseGrant(5, absl::Seconds(5));
  ASSERT_THAT(lease, IsOk());
  EXPECT_EQ(lease->ttl(), 5);
  EXPECT_THAT(etcd_->LeaseKeepAliveOnce(lease->id(), absl::Seconds(5)), IsOkAndHolds(5));
  ASSERT_THAT(etcd_->LeaseRevoke(lease->id(), absl::Seconds(5)), IsOk());
  EXPECT_THAT(etcd_->LeaseKeepAliveOnce(lease->id(), absl::Seconds(5)),
              StatusIs(Code::kNotFound, HasSubstr("is gone")));
}

// What the election and the fence send: a compare of a key's create revision with 0 (the key
// is absent), which protobuf's JSON leaves out unless the oneof is set; and etcd's own errors
// with their codes (a lease that does not exist is NotFound).
TEST_P(EtcdClusterTest, CompareCreateRevisionZero_AndEtcdsErrorsKeepTheirCodes) {
  auto create_once = [&] {
    etcdserverpb::TxnRequest txn;
    auto* absent = txn.add_compare();
    absent->set_key("once");
    absent->set_target(etcdserverpb::Compare::CREATE);
    absent->set_result(etcdserverpb::Compare::EQUAL);
    absent->set_create_revision(0);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key("once");
    put->set_value("1");
    return etcd_->Txn(txn, absl::Seconds(5));
  };
  auto first = create_once();
  ASSERT_THAT(first, IsOk());
  EXPECT_TRUE(first->succeeded());
  auto second = create_once();
  ASSERT_THAT(second, IsOk());
  EXPECT_FALSE(second->succeeded());
  EXPECT_THAT(etcd_->LeaseRevoke(0x12345, absl::Seconds(5)),
              StatusIs(Code::kNotFound, HasSubstr("lease not found")));
}

}  // namespace
}  // namespace muster
