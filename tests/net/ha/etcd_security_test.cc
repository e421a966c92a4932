// etcd that requires TLS and a user, as production clusters do: a 3-member cluster serving
// clients over https:// only (a client certificate required) and, in the second suite, with
// etcd's authentication on. The leader's client over gRPC and through the JSON gateway, and the
// agents' leader registry (etcd://, configured from MUSTER_ETCD_*), against each; a wrong
// password, a missing CA, certificates that do not load, an expired token renewed once for the
// calls refused together.
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/net/agent/session/etcd/ha_leader_registry.h"
#include "muster/net/ha/etcd/etcd_client.h"
#include "muster/net/ha/etcd/etcd_gateway_member.h"
#include "muster/net/ha/etcd/etcd_grpc_member.h"
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
using ::testing::Not;
using Code = absl::StatusCode;

// Puts `key` = `value` and reads it back through `client`: the value read.
absl::StatusOr<std::string> PutAndGet(EtcdClient& client, const std::string& key,
                                      const std::string& value) {
  etcdserverpb::TxnRequest txn;
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
  if (auto done = client.Txn(txn, absl::Seconds(5)); !done.ok()) return done.status();
  etcdserverpb::RangeRequest read;
  read.set_key(key);
  auto got = client.Range(read, absl::Seconds(5));
  if (!got.ok()) return got.status();
  if (got->kvs_size() != 1) return absl::NotFoundError(key);
  return got->kvs(0).value();
}

// The cluster's endpoints as an etcd:// URL takes them (HOST:PORT; TLS from the environment).
std::string Hosts(const EtcdCluster& cluster) {
  return absl::StrCat(cluster.endpoint(0), ",", cluster.endpoint(1), ",", cluster.endpoint(2));
}

TEST(EtcdSecurityCheckTest, FilesMustBeReadable_ACertificateNeedsItsKey_AUserItsPassword) {
  EXPECT_THAT(CheckEtcdSecurity({.ca_file = "/no/such/ca.pem"}),
              StatusIs(Code::kInvalidArgument,
                       AllOf(HasSubstr("MUSTER_ETCD_CACERT"), HasSubstr("/no/such/ca.pem"))));
  EXPECT_THAT(CheckEtcdSecurity({.cert_file = "/etc/hostname"}),
              StatusIs(Code::kInvalidArgument, HasSubstr("MUSTER_ETCD_KEY")));
  EXPECT_THAT(CheckEtcdSecurity({.user = "root"}),
              StatusIs(Code::kInvalidArgument, AllOf(HasSubstr("\"root\" has no password"),
                                                     HasSubstr("MUSTER_ETCD_PASSWORD"))));
  EXPECT_THAT(CheckEtcdSecurity({.password = "secret"}),
              StatusIs(Code::kInvalidArgument,
                       AllOf(HasSubstr("MUSTER_ETCD_USER"), Not(HasSubstr("secret")))));
  auto https = CheckEtcdSecurity({}, EtcdEndpointsUseTls("https://h1:2379,https://h2:2379"));
  ASSERT_THAT(https, IsOk());
  EXPECT_TRUE(https->tls);
  auto plain = CheckEtcdSecurity({}, EtcdEndpointsUseTls("h1:2379"));
  ASSERT_THAT(plain, IsOk());
  EXPECT_FALSE(plain->tls);
  // https:// with a bare endpoint is a mix, refused: the bare one would go without TLS.
  EXPECT_THAT(ParseEtcdEndpoints("h1:2379,https://h2:2379"),
              StatusIs(Code::kInvalidArgument, HasSubstr("mix https://")));
  auto url = ParseEtcdLeaderUrl("etcd://https://h1:2379,https://h2:2379/job");
  ASSERT_THAT(url, IsOk());
  EXPECT_TRUE(url->tls);
  EXPECT_THAT(url->endpoints, ElementsAre("h1:2379", "h2:2379"));
  EXPECT_THAT(ParseEtcdLeaderUrl("etcd://https://h1:2379"),
              StatusIs(Code::kInvalidArgument, HasSubstr("is not etcd://HOST:PORT")));
}

TEST(EtcdSecurityCheckTest, APasswordFile_IsReadAndTrimmed_OneThatCannotBeReadIsNamed) {
  const std::string file = ::testing::TempDir() + "/etcd-password";
  {
    std::ofstream out(file);
    out << "from-a-file\n";
  }
  auto read = CheckEtcdSecurity({.tls = true, .user = "root", .password_file = file});
  ASSERT_THAT(read, IsOk());
  EXPECT_EQ(read->password, "from-a-file");
  EXPECT_THAT(CheckEtcdSecurity({.tls = true, .user = "root", .password_file = file + ".missing"}),
              StatusIs(Code::kInvalidArgument,
                       AllOf(HasSubstr("MUSTER_ETCD_PASSWORD_FILE"), HasSubstr(".missing"))));
  // Given both, the password itself wins.
  auto given =
      CheckEtcdSecurity({.tls = true, .user = "root", .password = "p", .password_file = file});
  ASSERT_THAT(given, IsOk());
  EXPECT_EQ(given->password, "p");
}

// A password never crosses the network in clear: a user needs TLS (https:// or a CA).
TEST(EtcdSecurityCheckTest, AUserOverPlainHttp_IsRefusedWithoutThePassword) {
  EXPECT_THAT(
      CheckEtcdSecurity({.user = "root", .password = "pw-71f3"}),
      StatusIs(Code::kInvalidArgument, AllOf(HasSubstr("\"root\" over plain HTTP"),
                                             HasSubstr("https://"), Not(HasSubstr("pw-71f3")))));
  EXPECT_THAT(CheckEtcdSecurity({.user = "root", .password = "pw-71f3"}, /*https=*/true), IsOk());
}

// A device or a FIFO named as a security file is refused before it is read (one would never
// end, the other block).
TEST(EtcdSecurityCheckTest, AFileThatIsNotARegularFile_IsRefused) {
  EXPECT_THAT(CheckEtcdSecurity({.tls = true, .user = "root", .password_file = "/dev/zero"}),
              StatusIs(Code::kInvalidArgument, AllOf(HasSubstr("/dev/zero is not a regular file"),
                                                     HasSubstr("MUSTER_ETCD_PASSWORD_FILE"))));
  EXPECT_THAT(CheckEtcdSecurity({.ca_file = "/dev/null"}),
              StatusIs(Code::kInvalidArgument, HasSubstr("not a regular file")));
}

TEST(EtcdSecurityCheckTest, ATokenIsPrintableAsciiOfBoundedSize) {
  EXPECT_TRUE(IsEtcdToken("gzCWdVgFkCtcjqMU.17"));
  EXPECT_TRUE(IsEtcdToken("eyJhbGciOiJSUzI1NiJ9.eyJ1c2VyIjoicm9vdCJ9.c2ln"));
  EXPECT_FALSE(IsEtcdToken(""));
  EXPECT_FALSE(IsEtcdToken("abc\r\nX-Injected: 1"));
  EXPECT_FALSE(IsEtcdToken("with space"));
  EXPECT_FALSE(IsEtcdToken(std::string(kMaxEtcdTokenBytes + 1, 'a')));
  EXPECT_TRUE(IsEtcdToken(std::string(kMaxEtcdTokenBytes, 'a')));
}

TEST(EtcdSecurityCheckTest, ACertificateOrKeyThatDoesNotLoad_IsNamed) {
  const std::string bad = ::testing::TempDir() + "/not-a-pem";
  {
    std::ofstream out(bad);
    out << "this is no certificate\n";
  }
  EXPECT_THAT(CheckEtcdSecurity({.cert_file = bad, .key_file = bad}),
              StatusIs(Code::kInvalidArgument,
                       AllOf(HasSubstr("do not load"), HasSubstr("MUSTER_ETCD_CERT"))));
  const std::string encrypted = ::testing::TempDir() + "/encrypted.key";
  {
    std::ofstream out(encrypted);
    out << "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n";
  }
  EXPECT_THAT(CheckEtcdSecurity({.cert_file = bad, .key_file = encrypted}),
              StatusIs(Code::kInvalidArgument, HasSubstr("is encrypted")));
}

class EtcdTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto started = EtcdCluster::StartSecure(3, /*user=*/false);
    ASSERT_THAT(started, IsOk());
    cluster_ = started->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  static EtcdCluster* cluster_;
};
EtcdCluster* EtcdTlsTest::cluster_ = nullptr;

TEST_F(EtcdTlsTest, OverGrpcAndTheGateway_WithTheClusterCaAndACertificate_ReadsAndWrites) {
  for (EtcdMemberFactory member :
       {EtcdMemberFactory(NewEtcdGrpcMember), EtcdMemberFactory(NewEtcdGatewayMember)}) {
    auto client = cluster_->Client(member);
    ASSERT_THAT(client, IsOk());
    EXPECT_THAT(PutAndGet(**client, "muster-test/tls", "over TLS"), IsOkAndHolds("over TLS"));
  }
}

TEST_F(EtcdTlsTest, WithoutTheClusterCa_NoMemberIsTrusted_ConnectFailsNamingTheEndpoints) {
  EtcdSecurity untrusting = cluster_->security();
  untrusting.ca_file.clear();  // the system's CAs, which did not sign the members' certificates
  for (EtcdMemberFactory member :
       {EtcdMemberFactory(NewEtcdGrpcMember), EtcdMemberFactory(NewEtcdGatewayMember)}) {
    auto client = EtcdClient::Connect({.endpoints = {cluster_->endpoint(0), cluster_->endpoint(1)},
                                       .member = member,
                                       .security = untrusting},
                                      absl::Seconds(1));
    EXPECT_THAT(client, StatusIs(Code::kUnavailable,
                                 HasSubstr("no etcd member answered at " + cluster_->endpoint(0))));
  }
}

TEST_F(EtcdTlsTest, PlainHttpToATlsCluster_IsRefused) {
  auto client = EtcdClient::Connect(
      {.endpoints = {cluster_->endpoint(0)}, .member = NewEtcdGatewayMember}, absl::Seconds(1));
  EXPECT_THAT(client, StatusIs(Code::kUnavailable));
}

TEST_F(EtcdTlsTest, AMismatchedCertificateAndKey_AreRefusedBeforeAnyConnection) {
  EtcdSecurity mismatched = cluster_->security();
  mismatched.key_file = mismatched.ca_file.substr(0, mismatched.ca_file.rfind('/')) +
                        "/server.key";  // the members' key, not the client certificate's
  EXPECT_THAT(CheckEtcdSecurity(mismatched),
              StatusIs(Code::kInvalidArgument, HasSubstr("do not load")));
}

TEST_F(EtcdTlsTest, AgentsRegistry_ReadsTheLeadersOverTls) {
  auto client = cluster_->Client();
  ASSERT_THAT(client, IsOk());
  ASSERT_THAT(PutAndGet(**client, HaLeadersPrefix("tls-job") + "a", "10.0.0.7:7400"), IsOk());
  const std::string url = absl::StrCat("etcd://", Hosts(*cluster_), "/tls-job");
  EXPECT_THAT(ReadHaLeadersThroughGateway(url, absl::Seconds(5), cluster_->security()),
              IsOkAndHolds(ElementsAre("10.0.0.7:7400")));
  // https:// endpoints in the URL turn TLS on; the CA is still the cluster's.
  EtcdSecurity ca_only = cluster_->security();
  ca_only.tls = false;
  EXPECT_THAT(
      ReadHaLeadersThroughGateway(absl::StrCat("etcd://https://", cluster_->endpoint(0),
                                               ",https://", cluster_->endpoint(1), "/tls-job"),
                                  absl::Seconds(5), ca_only),
      IsOkAndHolds(ElementsAre("10.0.0.7:7400")));
  // Without TLS: plain HTTP, which the members do not speak.
  EXPECT_THAT(ReadHaLeadersThroughGateway(url, absl::Milliseconds(800), EtcdSecurity{}),
              StatusIs(Code::kUnavailable, HasSubstr(url)));
}

class EtcdAuthTest : public EtcdTlsTest {
 protected:
  static void SetUpTestSuite() {
    // Tokens that expire after 2 s unused, so that a test sees one expire.
    auto started = EtcdCluster::StartSecure(3, /*user=*/true, absl::Seconds(2));
    ASSERT_THAT(started, IsOk());
    cluster_ = started->release();
  }
};

TEST_F(EtcdAuthTest, AUserAuthenticates_OverGrpcAndTheGateway_ThenReadsAndWrites) {
  ASSERT_TRUE(cluster_->security().auth());
  for (EtcdMemberFactory member :
       {EtcdMemberFactory(NewEtcdGrpcMember), EtcdMemberFactory(NewEtcdGatewayMember)}) {
    auto client = cluster_->Client(member);
    ASSERT_THAT(client, IsOk());
    EXPECT_THAT(PutAndGet(**client, "muster-test/auth", "with a token"),
                IsOkAndHolds("with a token"));
  }
}

TEST_F(EtcdAuthTest, AWrongPassword_IsInvalidArgumentNamingTheUserNeverThePassword) {
  EtcdSecurity wrong = cluster_->security();
  wrong.password = "not-the-password-4711";
  for (EtcdMemberFactory member :
       {EtcdMemberFactory(NewEtcdGrpcMember), EtcdMemberFactory(NewEtcdGatewayMember)}) {
    auto client = EtcdClient::Connect(
        {.endpoints = {cluster_->endpoint(0)}, .member = member, .security = wrong},
        absl::Seconds(5));
    EXPECT_THAT(client,
                StatusIs(Code::kInvalidArgument, AllOf(HasSubstr("etcd refused user \"root\""),
                                                       Not(HasSubstr("not-the-password-4711")),
                                                       Not(HasSubstr("muster-test-pw")))));
  }
  EtcdSecurity anonymous = cluster_->security();
  anonymous.user.clear();
  anonymous.password.clear();
  EXPECT_THAT(EtcdClient::Connect({.endpoints = {cluster_->endpoint(0)},
                                   .member = NewEtcdGatewayMember,
                                   .security = anonymous},
                                  absl::Seconds(5)),
              StatusIs(Code::kUnauthenticated,
                       AllOf(HasSubstr("requires a user"), HasSubstr("MUSTER_ETCD_USER"))));
}

TEST_F(EtcdAuthTest, AnExpiredToken_IsRenewed_TheCallSucceeds) {
  for (EtcdMemberFactory member :
       {EtcdMemberFactory(NewEtcdGrpcMember), EtcdMemberFactory(NewEtcdGatewayMember)}) {
    auto client = cluster_->Client(member);
    ASSERT_THAT(client, IsOk());
    ASSERT_THAT(PutAndGet(**client, "muster-test/renew", "1"), IsOkAndHolds("1"));
    EXPECT_EQ((*client)->authentications(), 1);
    // Not a timing assertion: the token's TTL is 2 s unused, and etcd sweeps expired tokens
    // once a second, so it has certainly expired.
    absl::SleepFor(absl::Seconds(4));
    EXPECT_THAT(PutAndGet(**client, "muster-test/renew", "2"), IsOkAndHolds("2"));
    EXPECT_EQ((*client)->authentications(), 2);  // renewed once, then used again
  }
}

// Calls refused together for an expired token renew it once: one call authenticates, the
// others wait for it and use its token.
TEST_F(EtcdAuthTest, ManyCallsRefusedTogether_RenewTheTokenOnce) {
  for (EtcdMemberFactory member :
       {EtcdMemberFactory(NewEtcdGrpcMember), EtcdMemberFactory(NewEtcdGatewayMember)}) {
    auto client = cluster_->Client(member);
    ASSERT_THAT(client, IsOk());
    ASSERT_THAT(PutAndGet(**client, "muster-test/together", "0"), IsOk());
    ASSERT_EQ((*client)->authentications(), 1);
    absl::SleepFor(absl::Seconds(4));  // the token's TTL is 2 s unused: it has expired
    constexpr int kThreads = 8;
    std::vector<absl::StatusOr<std::string>> results(kThreads, absl::UnknownError("not run"));
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        results[i] =
            PutAndGet(**client, absl::StrCat("muster-test/together/", i), absl::StrCat("v", i));
      });
    }
    for (auto& thread : threads) thread.join();
    for (int i = 0; i < kThreads; ++i) {
      EXPECT_THAT(results[i], IsOkAndHolds(absl::StrCat("v", i))) << "thread " << i;
    }
    EXPECT_EQ((*client)->authentications(), 2);
  }
}

// The agents' reads of one process share one token: reads that find it expired together ask
// etcd for one new token, not one each.
TEST_F(EtcdAuthTest, AgentsRegistry_ReadsThatFindTheTokenExpiredTogether_AuthenticateOnce) {
  auto client = cluster_->Client();
  ASSERT_THAT(client, IsOk());
  ASSERT_THAT(PutAndGet(**client, HaLeadersPrefix("shared-job") + "a", "10.0.0.9:7400"), IsOk());
  const std::string url = absl::StrCat("etcd://", Hosts(*cluster_), "/shared-job");
  ASSERT_THAT(ReadHaLeadersThroughGateway(url, absl::Seconds(5), cluster_->security()), IsOk());
  absl::SleepFor(absl::Seconds(4));  // expired
  const uint64_t before = EtcdReadAuthentications();
  constexpr int kThreads = 8;
  std::vector<absl::StatusOr<std::vector<std::string>>> results(kThreads,
                                                                absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      results[i] = ReadHaLeadersThroughGateway(url, absl::Seconds(5), cluster_->security());
    });
  }
  for (auto& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_THAT(results[i], IsOkAndHolds(ElementsAre("10.0.0.9:7400"))) << "thread " << i;
  }
  EXPECT_EQ(EtcdReadAuthentications() - before, 1u);
}

TEST_F(EtcdAuthTest, AgentsRegistry_WithAUser_ReadsTheLeaders) {
  auto client = cluster_->Client();
  ASSERT_THAT(client, IsOk());
  ASSERT_THAT(PutAndGet(**client, HaLeadersPrefix("auth-job") + "a", "10.0.0.8:7400"), IsOk());
  const std::string url = absl::StrCat("etcd://", Hosts(*cluster_), "/auth-job");
  EXPECT_THAT(ReadHaLeadersThroughGateway(url, absl::Seconds(5), cluster_->security()),
              IsOkAndHolds(ElementsAre("10.0.0.8:7400")));
  // The token is the process's: reads go on after it expired (TTL 2 s), asking for a new one.
  absl::SleepFor(absl::Seconds(4));
  EXPECT_THAT(ReadHaLeadersThroughGateway(url, absl::Seconds(5), cluster_->security()),
              IsOkAndHolds(ElementsAre("10.0.0.8:7400")));
  EtcdSecurity anonymous = cluster_->security();
  anonymous.user.clear();
  anonymous.password.clear();
  EXPECT_THAT(ReadHaLeadersThroughGateway(url, absl::Seconds(5), anonymous),
              StatusIs(Code::kUnauthenticated, HasSubstr("requires a user")));
  EtcdSecurity wrong = cluster_->security();
  wrong.user = "nobody";  // another user: no token of root's serves it
  wrong.password = "wrong-password-0815";
  EXPECT_THAT(ReadHaLeadersThroughGateway(url, absl::Seconds(5), wrong),
              StatusIs(Code::kInvalidArgument, AllOf(HasSubstr("etcd refused user \"nobody\""),
                                                     Not(HasSubstr("wrong-password-0815")))));
}

}  // namespace
}  // namespace muster
