#include "muster/net/process/launch_environment.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace muster {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(SpareAssignmentTest, RoundTrip_TheTasksVariables) {
  SpareAssignment variables = {{"MUSTER_JOB", "worker"},    {"MUSTER_TASK", "3"},
                               {"MUSTER_GENERATION", "1"},  {"RANK", "3"},
                               {"MASTER_ADDR", "10.0.0.1"}, {"MUSTER_TLS_CERT", "/c=d.pem"}};
  std::string text = FormatSpareAssignment(variables);
  EXPECT_EQ(text.substr(0, 28), "MUSTER_JOB=worker\nMUSTER_TAS");
  auto parsed = ParseSpareAssignment(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, variables);
  EXPECT_THAT(*ParseSpareAssignment("RANK=\n"), ElementsAre(Pair("RANK", "")));
}

// The key is in the job's store, which any task may write: a value never sets a variable a
// launcher does not give.
TEST(SpareAssignmentTest, OtherVariablesOrMalformedLines_InvalidArgument) {
  for (const char* text : {"LD_PRELOAD=/tmp/x.so\n", "PATH=/tmp\n", "MUSTER_SPARE=k\n",
                           "muster_task=1\n", "MUSTER_TASK 1\n", "=1\n", "MUSTER_TASK-X=1\n"}) {
    auto parsed = ParseSpareAssignment(text);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(parsed.status().message(), HasSubstr("is not NAME=VALUE of a variable")) << text;
  }
  std::string many;
  for (int i = 0; i < 33; ++i) many += "RANK=1\n";
  EXPECT_THAT(ParseSpareAssignment(many).status().message(), HasSubstr("too large"));
  EXPECT_THAT(ParseSpareAssignment("RANK=" + std::string(5000, '1')).status().message(),
              HasSubstr("too large"));
}

}  // namespace
}  // namespace muster
