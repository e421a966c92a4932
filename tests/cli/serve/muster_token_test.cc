// The job token with real processes: `muster serve --token-file`, the CLI and a worker with and
// without it. Without the token nothing is read or changed; with it everything works.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/cli/cli_process.h"

namespace muster::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// In a file of this process's own: ctest runs the tests of this suite in parallel processes,
// which would otherwise rewrite each other's token files while they are read.
std::string WriteFile(const std::string& name, const std::string& content) {
  std::string path = ::testing::TempDir() + name + "_" + std::to_string(getpid());
  std::ofstream(path) << content;
  return path;
}

class MusterTokenTest : public ::testing::Test {
 protected:
  std::string token_file_ = WriteFile("muster_token", "correct-horse-battery\n");
  std::string wrong_file_ = WriteFile("muster_wrong_token", "guess\n");
  Leader leader_{{"--job=worker=1", "--token-file=" + token_file_}};
};

TEST_F(MusterTokenTest, CliWithoutOrWithWrongToken_UnauthenticatedNothingChanged) {
  ASSERT_TRUE(leader_.ok());
  Result put = Kv(leader_, "put", {"config/lr", "0.01"});
  EXPECT_EQ(put.code, 1);
  EXPECT_THAT(put.output, HasSubstr("UNAUTHENTICATED"));
  EXPECT_THAT(put.output, HasSubstr("--token-file"));
  Result wrong = Kv(leader_, "put", {"--token-file=" + wrong_file_, "config/lr", "0.01"});
  EXPECT_EQ(wrong.code, 1);
  EXPECT_THAT(wrong.output, HasSubstr("wrong job token"));
  Result status = RunMuster({"status", leader_.leader_flag()});
  EXPECT_EQ(status.code, 1);
  Result get = Kv(leader_, "get", {"--token-file=" + token_file_, "config/lr"});
  EXPECT_EQ(get.code, 1);
  EXPECT_THAT(get.output, HasSubstr("NOT_FOUND"));
  EXPECT_THAT(leader_.process().WaitForLine("refused", kBound).ok(), true);
  EXPECT_THAT(leader_.process().output(), Not(HasSubstr("correct-horse-battery")));
}

TEST_F(MusterTokenTest, CliAndWorkerWithToken_Work) {
  ASSERT_TRUE(leader_.ok());
  EXPECT_EQ(Kv(leader_, "put", {"--token-file=" + token_file_, "config/lr", "0.01"}).code, 0);
  Result get = Kv(leader_, "get", {"--token-file=" + token_file_, "config/lr"});
  EXPECT_EQ(get.output, "0.01\n");
  auto worker = Subprocess::Start({MUSTER_E2E_WORKER_BIN, "--leader=" + leader_.address(),
                                   "--scenario=shutdown", "--token_file=" + token_file_});
  ASSERT_TRUE(worker.ok());
  Result done = Finish(**worker);
  EXPECT_EQ(done.code, 0) << done.output;
  EXPECT_THAT(done.output, HasSubstr("EVENT connect code=OK"));
  EXPECT_THAT(done.output, HasSubstr("EVENT shutdown code=OK"));
  auto refused = Subprocess::Start({MUSTER_E2E_WORKER_BIN, "--leader=" + leader_.address(),
                                    "--scenario=shutdown", "--register_timeout_ms=3000"});
  ASSERT_TRUE(refused.ok());
  Result no_token = Finish(**refused);
  EXPECT_EQ(no_token.code, 1);
  EXPECT_THAT(no_token.output, HasSubstr("EVENT connect code=UNAUTHENTICATED"));
}

TEST(MusterServeTokenTest, EveryInterfaceWithoutToken_Warns) {
  Leader open({"--job=worker=1", "--host=0.0.0.0"});
  ASSERT_TRUE(open.ok());
  EXPECT_THAT(open.process().output(),
              HasSubstr("WARNING: listening on 0.0.0.0 without TLS or a job token"));
}

}  // namespace
}  // namespace muster::cli
