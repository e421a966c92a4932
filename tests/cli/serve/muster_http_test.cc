// `muster serve --http` with real processes: Prometheus metrics and the page's JSON follow the
// job (workers register, a key is written, a worker is killed with SIGKILL), the job token is
// asked of every request, and a bad --http is refused with a clear message.
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>
#include <gmock/gmock.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "tests/cli/cli_process.h"
#include "tests/testing/http_get.h"

namespace muster::cli {
namespace {

using ::muster::testing::HttpGet;
using ::muster::testing::HttpReply;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The endpoint's URL from the leader's ready line ("... http=http://127.0.0.1:PORT").
std::string HttpUrl(Leader& leader) {
  std::smatch match;
  const std::string& output = leader.process().output();
  if (!std::regex_search(output, match, std::regex("http=(http://[0-9.]+:[0-9]+)"))) return "";
  return match[1];
}

// The value of the sample `series` (name and labels exactly as printed), or -1.
double Metric(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  size_t start = at + series.size() + 2;
  double value = -1;
  if (!absl::SimpleAtod(text.substr(start, text.find('\n', start) - start), &value)) return -1;
  return value;
}

// Polls /metrics until `series` has `value` (at most kBound); returns the last text.
std::string WaitForMetric(const std::string& url, const std::string& series, double value) {
  absl::Time deadline = absl::Now() + kBound;
  std::string text;
  while (absl::Now() < deadline) {
    text = HttpGet(url, "/metrics").body;
    if (Metric(text, series) == value) return text;
    absl::SleepFor(absl::Milliseconds(100));
  }
  ADD_FAILURE() << series << " never became " << value << " in:\n" << text;
  return text;
}

std::unique_ptr<Subprocess> StartWorker(const Leader& leader, int task) {
  auto worker = Subprocess::Start(
      {MUSTER_WORKER_BIN, "--leader=" + leader.address(), absl::StrCat("--task=", task), "--hold"});
  EXPECT_TRUE(worker.ok()) << worker.status();
  return worker.ok() ? *std::move(worker) : nullptr;
}

TEST(MusterHttpTest, MetricsAndPageState_FollowTheJob) {
  Leader leader({"--job=worker=2", "--recoverable-job=worker", "--http=127.0.0.1:0"});
  ASSERT_TRUE(leader.ok());
  std::string url = HttpUrl(leader);
  ASSERT_THAT(url, StartsWith("http://127.0.0.1:")) << leader.process().output();

  HttpReply first = HttpGet(url, "/metrics");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(Metric(first.body, "muster_tasks{job=\"worker\",state=\"disconnected\"}"), 2);

  auto worker0 = StartWorker(leader, 0);
  auto worker1 = StartWorker(leader, 1);
  ASSERT_NE(worker1, nullptr);
  ASSERT_TRUE(worker0->WaitForLine("holding", kBound).ok()) << worker0->output();
  ASSERT_TRUE(worker1->WaitForLine("holding", kBound).ok()) << worker1->output();
  std::string text = WaitForMetric(url, "muster_tasks{job=\"worker\",state=\"connected\"}", 2);
  // Each worker published or read its bootstrap key (examples/worker.cc).
  EXPECT_GE(Metric(text, "muster_kv_keys"), 1);
  EXPECT_GE(Metric(text, "muster_kv_operations_total{verb=\"insert\",result=\"ok\"}") +
                Metric(text, "muster_kv_operations_total{verb=\"get\",result=\"ok\"}"),
            2);
  EXPECT_EQ(Metric(text, "muster_connections"), 2);

  ASSERT_EQ(Kv(leader, "put", {"observe/answer", "42"}).code, 0);
  text = WaitForMetric(url, "muster_kv_directories", 2);

  worker1->Signal(SIGKILL);
  text = WaitForMetric(url, "muster_tasks{job=\"worker\",state=\"error\"}", 1);
  EXPECT_EQ(Metric(text, "muster_tasks{job=\"worker\",state=\"connected\"}"), 1);
  EXPECT_EQ(Metric(text, "muster_task_failures_total{cause=\"unavailable\"}"), 1);
  EXPECT_EQ(Metric(text, "muster_task_registrations_total"), 2);
  EXPECT_EQ(Metric(text, "muster_barriers_passed_total"), 1);  // the workers' ready_to_train

  HttpReply state = HttpGet(url, "/api/state");
  ASSERT_EQ(state.status, 200) << state.body;
  EXPECT_EQ(state.content_type, "application/json");
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(state.body, &parsed).ok()) << state.body;
  const auto& fields = parsed.fields();
  EXPECT_EQ(fields.at("tasks").struct_value().fields().at("state").string_value(), "CE");
  const auto& errors = fields.at("errors").list_value();
  ASSERT_EQ(errors.values_size(), 1);
  EXPECT_EQ(errors.values(0).struct_value().fields().at("task").string_value(),
            "/job:worker/task:1");
  EXPECT_EQ(fields.at("leader").struct_value().fields().at("address").string_value(),
            leader.address());

  HttpReply page = HttpGet(url, "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_THAT(page.body, HasSubstr("<canvas"));
  EXPECT_EQ(HttpGet(url, "/nothing").status, 404);
  worker0->Signal(SIGINT);
  Finish(*worker0);
}

TEST(MusterHttpTest, JobToken_IsAskedOfEveryRequest) {
  std::string token_file = ::testing::TempDir() + "muster_http_token";
  std::ofstream(token_file) << "correct-horse-battery\n";
  Leader leader({"--job=worker=1", "--http=127.0.0.1:0", "--token-file=" + token_file});
  ASSERT_TRUE(leader.ok());
  std::string url = HttpUrl(leader);
  ASSERT_FALSE(url.empty()) << leader.process().output();
  HttpReply none = HttpGet(url, "/metrics");
  EXPECT_EQ(none.status, 401);
  EXPECT_THAT(none.body, HasSubstr("requires the job token"));
  EXPECT_EQ(HttpGet(url, "/api/state", {{"Authorization", "Bearer guess"}}).status, 401);
  EXPECT_EQ(HttpGet(url, "/metrics", {{"Authorization", "Bearer correct-horse-battery"}}).status,
            200);
  EXPECT_EQ(
      HttpGet(url, "/api/state", {{"Cookie", "a=b; muster_token=correct-horse-battery"}}).status,
      200);
  // The page itself carries nothing secret: it loads and asks for the token.
  EXPECT_EQ(HttpGet(url, "/").status, 200);
}

// GETs `path` over HTTPS with the client certificate `name` of `dir` (none when empty). The
// leader's certificates name no host, so the client checks the chain only through the server's
// refusal of clients: what is tested here is that the endpoint admits whom the port admits.
int HttpsStatus(const std::string& url, const std::string& dir, const std::string& name) {
  ::muster::testing::IgnoreSigpipe();
  std::string host_port = url.substr(std::string("https://").size());
  std::string host = host_port.substr(0, host_port.rfind(':'));
  int port = std::stoi(host_port.substr(host_port.rfind(':') + 1));
  std::unique_ptr<httplib::SSLClient> client =
      name.empty() ? std::make_unique<httplib::SSLClient>(host, port)
                   : std::make_unique<httplib::SSLClient>(host, port, dir + "/" + name + ".pem",
                                                          dir + "/" + name + ".key");
  client->enable_server_certificate_verification(false);
  client->set_connection_timeout(std::chrono::seconds(10));
  client->set_read_timeout(std::chrono::seconds(10));
  auto result = client->Get("/metrics");
  return result ? result->status : 0;
}

TEST(MusterHttpTest, WithTls_OnlyClientsOfTheJobsCa) {
  std::string job = absl::StrCat(::testing::TempDir(), "muster_http_tls_", ::getpid());
  std::string other = job + "_other";
  std::filesystem::remove_all(job);
  std::filesystem::remove_all(other);
  ASSERT_EQ(RunMuster({"tls", "init", job, "--names=leader,cli"}).code, 0);
  ASSERT_EQ(RunMuster({"tls", "init", other, "--names=cli"}).code, 0);
  {
    Leader leader({"--job=worker=1", "--http=127.0.0.1:0", "--tls-cert=" + job + "/leader.pem",
                   "--tls-key=" + job + "/leader.key", "--tls-ca=" + job + "/ca.pem"});
    ASSERT_TRUE(leader.ok());
    std::smatch match;
    const std::string& output = leader.process().output();
    ASSERT_TRUE(std::regex_search(output, match, std::regex("http=(https://[0-9.]+:[0-9]+)")))
        << output;
    std::string url = match[1];
    EXPECT_EQ(HttpsStatus(url, job, "cli"), 200);
    EXPECT_EQ(HttpsStatus(url, job, ""), 0);                              // no client certificate
    EXPECT_EQ(HttpsStatus(url, other, "cli"), 0);                         // another CA's
    EXPECT_EQ(HttpGet("http://" + url.substr(8), "/metrics").status, 0);  // plain HTTP
  }
  std::filesystem::remove_all(job);
  std::filesystem::remove_all(other);
}

TEST(MusterHttpTest, BadHttpAddress_IsAUsageError) {
  Result bad = RunMuster({"serve", "--job=worker=1", "--port=0", "--http=nonsense"});
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("--http nonsense is not HOST:PORT"));
}

TEST(MusterHttpTest, HttpPortInUse_FailsNamingIt) {
  Leader first({"--job=worker=1", "--http=127.0.0.1:0"});
  ASSERT_TRUE(first.ok());
  std::string url = HttpUrl(first);
  ASSERT_FALSE(url.empty());
  std::string port = url.substr(url.rfind(':') + 1);
  Result second = RunMuster({"serve", "--job=worker=1", "--port=0", "--http=127.0.0.1:" + port});
  EXPECT_NE(second.code, 0) << second.output;
  EXPECT_THAT(second.output, HasSubstr("cannot serve HTTP on 127.0.0.1:" + port));
}

}  // namespace
}  // namespace muster::cli
