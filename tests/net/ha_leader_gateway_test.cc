// Reading an HA job's leaders through etcd's JSON gateway against a fake etcd (an HTTP server on
// 127.0.0.1 that answers what each test says): a well-formed reply, then replies no etcd should
// give (not JSON, an HTTP error, too long, malformed values). Each is a clear status, bounded in
// time; none is taken for leaders. The real gateway: tests/net/ha/ha_leader_registry_test.cc.
#include <atomic>
#include <thread>

#include <absl/strings/escaping.h>
#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/net/agent/session/etcd/ha_leader_registry.h"
#include "muster/net/observe/httplib.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOkAndHolds;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

// A reply of the gateway to the leaders' txn: `registered` under muster/j/leaders/, `active`
// holding muster/j/leader (none when empty).
std::string TxnReply(const std::vector<std::string>& registered, const std::string& active) {
  std::string kvs;
  for (const std::string& value : registered) {
    absl::StrAppend(&kvs, kvs.empty() ? "" : ",",
                    R"({"key":"eA==","create_revision":"2","value":")", absl::Base64Escape(value),
                    R"("})");
  }
  std::string holder =
      active.empty() ? "" : absl::StrCat(R"({"value":")", absl::Base64Escape(active), R"("})");
  return absl::StrCat(R"({"header":{"revision":"9"},"succeeded":true,"responses":[)",
                      R"({"response_range":{"kvs":[)", kvs, R"(],"count":"1"}},)",
                      R"({"response_range":{"kvs":[)", holder, R"(]}}]})");
}

class FakeEtcd {
 public:
  FakeEtcd(int status, std::string body, const std::string& host = "127.0.0.1") : host_(host) {
    server_.Post("/v3/kv/txn", [this, status, body](const httplib::Request& request,
                                                    httplib::Response& response) {
      last_request_ = request.body;
      response.status = status;
      response.set_content(body, "application/json");
    });
    port_ = server_.bind_to_any_port(host);
    if (port_ <= 0) return;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) absl::SleepFor(absl::Milliseconds(1));
  }
  ~FakeEtcd() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  bool listening() const { return port_ > 0; }
  std::string url(const std::string& name = "j") const {
    const bool v6 = host_.find(':') != std::string::npos;
    return absl::StrCat("etcd://", v6 ? "[" : "", host_, v6 ? "]" : "", ":", port_, "/", name);
  }
  const std::string& last_request() const { return last_request_; }

 private:
  httplib::Server server_;
  std::string host_;
  int port_ = 0;
  std::thread thread_;
  std::string last_request_;
};

TEST(HaLeaderGatewayTest, ActiveFirst_AndTheRequestAsksBothKeysInOneTxn) {
  FakeEtcd etcd(200, TxnReply({"h2:7400", "h1:7400", "h3:7400"}, "h3:7400"));
  EXPECT_THAT(ReadHaLeadersThroughGateway(etcd.url(), absl::Seconds(5)),
              IsOkAndHolds(ElementsAre("h3:7400", "h1:7400", "h2:7400")));
  // muster/j/leaders/ to muster/j/leaders0, and muster/j/leader, base64.
  EXPECT_THAT(etcd.last_request(),
              AllOf(HasSubstr(absl::Base64Escape("muster/j/leaders/")),
                    HasSubstr(absl::Base64Escape("muster/j/leaders0")),
                    HasSubstr(absl::StrCat("\"", absl::Base64Escape("muster/j/leader"), "\""))));
}

TEST(HaLeaderGatewayTest, AnIpv6Member_InBrackets) {
  FakeEtcd etcd(200, TxnReply({"h1:7400"}, "h1:7400"), "::1");
  if (!etcd.listening()) GTEST_SKIP() << "no IPv6 loopback here";
  EXPECT_THAT(ReadHaLeadersThroughGateway(etcd.url(), absl::Seconds(5)),
              IsOkAndHolds(ElementsAre("h1:7400")));
}

TEST(HaLeaderGatewayTest, ValuesThatAreNotOneAddress_Skipped_NoneLeftIsNotFound) {
  FakeEtcd etcd(200, TxnReply({"h1:7400,h2:7400", "no-port", "h4:7400"}, "bad value"));
  EXPECT_THAT(ReadHaLeadersThroughGateway(etcd.url(), absl::Seconds(5)),
              IsOkAndHolds(ElementsAre("h4:7400")));
  FakeEtcd none(200, TxnReply({"x"}, ""));
  EXPECT_THAT(ReadHaLeadersThroughGateway(none.url(), absl::Seconds(5)),
              StatusIs(Code::kNotFound, HasSubstr("no leader of HA job j is registered")));
}

TEST(HaLeaderGatewayTest, NotJsonOrNotTheRangesAsked_UnavailableWithinTheTimeout) {
  for (const char* body : {"<html>hello</html>", R"({"responses":[]})", R"([1,2])"}) {
    FakeEtcd etcd(200, body);
    const absl::Time start = absl::Now();
    EXPECT_THAT(ReadHaLeadersThroughGateway(etcd.url(), absl::Milliseconds(500)),
                StatusIs(Code::kUnavailable, HasSubstr("cannot read the leaders of etcd://")))
        << body;
    EXPECT_LT(absl::Now() - start, absl::Seconds(3)) << body;
  }
}

TEST(HaLeaderGatewayTest, TooLongAReply_CutOffAndUnavailable) {
  FakeEtcd etcd(200, std::string(1 << 20, ' '));
  EXPECT_THAT(ReadHaLeadersThroughGateway(etcd.url(), absl::Milliseconds(500)),
              StatusIs(Code::kUnavailable, HasSubstr("longer than 262144 bytes")));
}

TEST(HaLeaderGatewayTest, RefusedWith4xx_FailedPreconditionAtOnceNamingTheGateway) {
  FakeEtcd etcd(404, "404 page not found");
  const absl::Time start = absl::Now();
  EXPECT_THAT(ReadHaLeadersThroughGateway(etcd.url(), absl::Seconds(10)),
              StatusIs(Code::kFailedPrecondition,
                       AllOf(HasSubstr("HTTP 404"), HasSubstr("--enable-grpc-gateway"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));  // not asked again until the timeout
}

}  // namespace
}  // namespace muster
