// Mutual TLS with real processes: `muster tls init` makes the certificates, `muster serve
// --tls-*` requires them; the CLI (flags) and a worker process ($MUSTER_TLS_*) with the job's
// certificates work end to end; a plain client and a client of another CA get nothing, and the
// leader says why, then goes on serving.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/cli/cli_process.h"

namespace muster::cli {
namespace {

using ::testing::HasSubstr;

std::string Dir(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "muster_cli_tls_", ::getpid(), "_", name);
}

std::vector<std::string> TlsFlags(const std::string& dir, const std::string& node) {
  return {"--tls-cert=" + dir + "/" + node + ".pem", "--tls-key=" + dir + "/" + node + ".key",
          "--tls-ca=" + dir + "/ca.pem"};
}

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class MusterTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* name : {"job", "other"}) std::filesystem::remove_all(Dir(name));
    Result job = RunMuster({"tls", "init", Dir("job"), "--names=leader,worker,cli"});
    ASSERT_EQ(job.code, 0) << job.output;
    Result other = RunMuster({"tls", "init", Dir("other"), "--names=cli"});
    ASSERT_EQ(other.code, 0) << other.output;
  }
  static void TearDownTestSuite() {
    for (const char* name : {"job", "other"}) std::filesystem::remove_all(Dir(name));
  }

  Leader leader_{Concat({"--job=worker=1"}, TlsFlags(Dir("job"), "leader"))};
};

TEST_F(MusterTlsTest, CliAndWorkerWithTheJobsCertificates_Work) {
  ASSERT_TRUE(leader_.ok());
  EXPECT_THAT(leader_.process().output(), HasSubstr("mutual TLS"));
  Result put = Kv(leader_, "put", Concat(TlsFlags(Dir("job"), "cli"), {"config/lr", "0.01"}));
  EXPECT_EQ(put.code, 0) << put.output;
  Result get = Kv(leader_, "get", Concat(TlsFlags(Dir("job"), "cli"), {"config/lr"}));
  EXPECT_EQ(get.code, 0) << get.output;
  EXPECT_EQ(get.output, "0.01\n");
  // A worker process that finds its certificates in the environment.
  auto worker = Subprocess::Start({"/usr/bin/env", "MUSTER_TLS_CERT=" + Dir("job") + "/worker.pem",
                                   "MUSTER_TLS_KEY=" + Dir("job") + "/worker.key",
                                   "MUSTER_TLS_CA=" + Dir("job") + "/ca.pem", MUSTER_E2E_WORKER_BIN,
                                   "--leader=" + leader_.address(), "--scenario=shutdown"});
  ASSERT_TRUE(worker.ok());
  Result done = Finish(**worker);
  EXPECT_EQ(done.code, 0) << done.output;
  EXPECT_THAT(done.output, HasSubstr("EVENT connect code=OK"));
  EXPECT_THAT(done.output, HasSubstr("EVENT shutdown code=OK"));
}

TEST_F(MusterTlsTest, PlainClientAndOtherCa_GetNothingLeaderGoesOn) {
  ASSERT_TRUE(leader_.ok());
  Result plain = Kv(leader_, "put", {"--timeout=2s", "config/lr", "666"});
  EXPECT_EQ(plain.code, 1);
  EXPECT_THAT(plain.output, HasSubstr("DEADLINE_EXCEEDED"));
  EXPECT_THAT(plain.output, HasSubstr("both sides use TLS"));
  ASSERT_TRUE(
      leader_.process().WaitForLine("TLS handshake failed: wrong version number", kBound).ok());
  Result other =
      Kv(leader_, "put", Concat(TlsFlags(Dir("other"), "cli"), {"--timeout=2s", "config/lr", "6"}));
  EXPECT_EQ(other.code, 1);
  EXPECT_THAT(other.output, HasSubstr("DEADLINE_EXCEEDED"));
  EXPECT_THAT(other.output, HasSubstr("certificate verify failed"));
  // A worker without certificates never registers.
  auto refused = Subprocess::Start({MUSTER_E2E_WORKER_BIN, "--leader=" + leader_.address(),
                                    "--scenario=shutdown", "--register_timeout_ms=1500"});
  ASSERT_TRUE(refused.ok());
  Result no_tls = Finish(**refused);
  EXPECT_EQ(no_tls.code, 1);
  EXPECT_THAT(no_tls.output, HasSubstr("EVENT connect code=DEADLINE_EXCEEDED"));
  // Nothing changed, and the leader still serves the job's own nodes.
  Result get =
      Kv(leader_, "get", Concat(TlsFlags(Dir("job"), "cli"), {"--wait=false", "config/lr"}));
  EXPECT_EQ(get.code, 1);
  EXPECT_THAT(get.output, HasSubstr("NOT_FOUND"));
}

TEST_F(MusterTlsTest, UnusableFiles_ServeAndCliRefuseToStart) {
  Result serve = RunMuster(
      Concat({"serve", "--job=worker=1", "--port=0", "--tls-cert=" + Dir("job") + "/leader.pem",
              "--tls-key=" + Dir("job") + "/worker.key", "--tls-ca=" + Dir("job") + "/ca.pem"},
             {}));
  EXPECT_EQ(serve.code, 2);
  EXPECT_THAT(serve.output, HasSubstr("does not match the certificate"));
  Result partial = Kv(leader_, "get", {"--tls-cert=" + Dir("job") + "/cli.pem", "config/lr"});
  EXPECT_EQ(partial.code, 1);
  EXPECT_THAT(partial.output, HasSubstr("some are missing"));
}

TEST(MusterServeTlsTest, EveryInterfaceWithTokenButNoTls_WarnsOfCleartext) {
  std::string token = ::testing::TempDir() + "muster_tls_test_token";
  { std::ofstream(token) << "t0ken\n"; }
  Leader open({"--job=worker=1", "--host=0.0.0.0", "--token-file=" + token});
  ASSERT_TRUE(open.ok());
  EXPECT_THAT(open.process().output(), HasSubstr("without TLS: the job token"));
}

}  // namespace
}  // namespace muster::cli
