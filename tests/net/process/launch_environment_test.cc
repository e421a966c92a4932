#include "muster/net/process/launch_environment.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace muster {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(SpareAssignmentTest, RoundTrip_TheTasksIdentity) {
  SpareAssignment variables = {{"MUSTER_JOB", "worker"},
                               {"MUSTER_TASK", "3"},
                               {"MUSTER_GENERATION", "1"},
                               {"MUSTER_ROUND", "0"},
                               {"RANK", "3"},
                               {"WORLD_SIZE", "4"},
                               {"LOCAL_RANK", "1"},
                               {"LOCAL_WORLD_SIZE", "2"}};
  std::string text = FormatSpareAssignment(variables);
  EXPECT_EQ(text.substr(0, 28), "MUSTER_JOB=worker\nMUSTER_TAS");
  auto parsed = ParseSpareAssignment(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, variables);
  EXPECT_THAT(*ParseSpareAssignment("RANK=\n"), ElementsAre(Pair("RANK", "")));
}

// The key is in the job's store: a value never names a leader, a file or any other variable,
// so a forged one could at most name another task.
TEST(SpareAssignmentTest, AnythingButATasksIdentity_InvalidArgument) {
  for (const char* text :
       {"LD_PRELOAD=/tmp/x.so\n", "PATH=/tmp\n", "MUSTER_SPARE=k\n", "MUSTER_LEADER=evil:1\n",
        "MUSTER_TOKEN_FILE=/home/u/.ssh/id_ed25519\n", "MUSTER_TLS_CA=/tmp/ca.pem\n",
        "MASTER_ADDR=evil\n", "muster_task=1\n", "MUSTER_TASK 1\n", "=1\n"}) {
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

// Until it takes a task, a spare is nothing a launcher's variables describe.
TEST(SpareAssignmentTest, ASpareWithoutItsTask_FailedPreconditionSayingWhatToDo) {
  absl::Status s = NotASpare(true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("Agent::TakeSpareAssignment"));
  EXPECT_TRUE(NotASpare(false).ok());
}

}  // namespace
}  // namespace muster
