// Mutual TLS with real processes: `muster tls init` makes the certificates, `muster serve
// --tls-*` requires them; the CLI (flags) and a worker process ($MUSTER_TLS_*) with the job's
// certificates work end to end; a plain client and a client of another CA get nothing at once,
// and the leader says why, naming the peer, then goes on serving.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>
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

// The CLI fails at the first refused handshake, long before its timeout (10 s), and so does a
// worker whose own TLS handshake is rejected; a plain worker, which cannot tell a TLS leader's
// refusal from a leader out of descriptors, tries until its register timeout.
TEST_F(MusterTlsTest, PlainClientAndOtherCa_GetNothingAtOnceLeaderGoesOn) {
  ASSERT_TRUE(leader_.ok());
  absl::Time start = absl::Now();
  Result plain = Kv(leader_, "put", {"config/lr", "666"});
  EXPECT_EQ(plain.code, 1);
  EXPECT_THAT(plain.output, HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(plain.output, HasSubstr("closed the connection before its handshake"));
  EXPECT_THAT(plain.output, HasSubstr("both sides use TLS"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  ASSERT_TRUE(
      leader_.process().WaitForLine("TLS handshake failed: wrong version number", kBound).ok());
  start = absl::Now();
  Result other = Kv(leader_, "put", Concat(TlsFlags(Dir("other"), "cli"), {"config/lr", "6"}));
  EXPECT_EQ(other.code, 1);
  EXPECT_THAT(other.output, HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(other.output, HasSubstr("certificate verify failed"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  // A worker of another CA and a worker without certificates never register.
  start = absl::Now();
  auto rejected = Subprocess::Start(
      {"/usr/bin/env", "MUSTER_TLS_CERT=" + Dir("other") + "/cli.pem",
       "MUSTER_TLS_KEY=" + Dir("other") + "/cli.key", "MUSTER_TLS_CA=" + Dir("other") + "/ca.pem",
       MUSTER_E2E_WORKER_BIN, "--leader=" + leader_.address(), "--scenario=shutdown"});
  ASSERT_TRUE(rejected.ok());
  Result other_ca = Finish(**rejected);
  EXPECT_EQ(other_ca.code, 1);
  EXPECT_THAT(other_ca.output, HasSubstr("EVENT connect code=UNAVAILABLE"));
  EXPECT_THAT(other_ca.output, HasSubstr("same CA"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  auto refused = Subprocess::Start({MUSTER_E2E_WORKER_BIN, "--leader=" + leader_.address(),
                                    "--scenario=shutdown", "--register_timeout_ms=1500"});
  ASSERT_TRUE(refused.ok());
  Result no_tls = Finish(**refused);
  EXPECT_EQ(no_tls.code, 1);
  EXPECT_THAT(no_tls.output, HasSubstr("EVENT connect code=DEADLINE_EXCEEDED"));
  EXPECT_THAT(no_tls.output, HasSubstr("both sides use TLS"));
  // Nothing changed, and the leader still serves the job's own nodes.
  Result get =
      Kv(leader_, "get", Concat(TlsFlags(Dir("job"), "cli"), {"--wait=false", "config/lr"}));
  EXPECT_EQ(get.code, 1);
  EXPECT_THAT(get.output, HasSubstr("NOT_FOUND"));
}

// A peer that resets its connection before the TLS handshake is named in the leader's log by
// the address it had when the leader accepted it (the socket no longer knows it afterwards).
TEST_F(MusterTlsTest, PeerResetDuringHandshake_LeaderNamesIt) {
  ASSERT_TRUE(leader_.ok());
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(leader_.address().substr(leader_.address().rfind(':') + 1), &port));
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in leader{};
  leader.sin_family = AF_INET;
  leader.sin_port = htons(static_cast<uint16_t>(port));
  leader.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&leader), sizeof(leader)), 0);
  sockaddr_in local{};
  socklen_t size = sizeof(local);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size), 0);
  absl::SleepFor(absl::Seconds(1));  // the leader has accepted the connection by now
  linger reset{.l_onoff = 1, .l_linger = 0};
  ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset)), 0);
  ::close(fd);  // RST
  auto line = leader_.process().WaitForLine("refused a connection from ", kBound);
  ASSERT_TRUE(line.ok()) << line.status() << leader_.process().output();
  EXPECT_THAT(*line, HasSubstr(absl::StrCat("refused a connection from 127.0.0.1:",
                                            ntohs(local.sin_port), " (TLS handshake failed")));
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

// Without --names, `tls init` makes the leader's and the workers' certificates and the CLI's,
// and the CLI works with the files it names.
TEST(MusterTlsInitTest, DefaultNames_AlsoMakeTheCliCertificateTheCliWorksWith) {
  const std::string dir = Dir("defaults");
  std::filesystem::remove_all(dir);
  Result init = RunMuster({"tls", "init", dir});
  ASSERT_EQ(init.code, 0) << init.output;
  EXPECT_THAT(init.output, HasSubstr("leader, worker, cli (.pem, .key)"));
  EXPECT_THAT(init.output, HasSubstr("the muster command uses " + dir + "/cli.pem and cli.key"));
  for (const char* file : {"ca.pem", "leader.pem", "worker.pem", "cli.pem", "cli.key"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + file)) << file;
  }
  {
    Leader leader(Concat({"--job=worker=1"}, TlsFlags(dir, "leader")));
    ASSERT_TRUE(leader.ok());
    Result put = Kv(leader, "put", Concat(TlsFlags(dir, "cli"), {"config/lr", "0.01"}));
    EXPECT_EQ(put.code, 0) << put.output;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace muster::cli
