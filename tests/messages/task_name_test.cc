#include "muster/messages/task_name.h"

#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::StatusIs;
using ::testing::HasSubstr;

TEST(TaskNameTest, Format_IsJobThenTask) {
  EXPECT_EQ(TaskName(MakeTask("worker", 12)), "/job:worker/task:12");
}

TEST(TaskNameTest, ForMessage_HugeOrBinaryJobNamesEscapedAndCut) {
  EXPECT_EQ(TaskNameForMessage(MakeTask("worker", 3)), "/job:worker/task:3");
  std::string huge(1 << 20, 'j');
  std::string quoted = TaskNameForMessage(MakeTask(huge, 0));
  EXPECT_LT(quoted.size(), 200u);
  EXPECT_THAT(quoted, ::testing::HasSubstr("...(1048576 bytes)/task:0"));
  EXPECT_EQ(JobNameForMessage(std::string("a\0b\n", 4)),
            "a\\x00\\x62\\n");  // CHexEscape: no hex digit may follow \\x00
}

TEST(TaskNameTest, Parse_RoundTripsAndAcceptsReplica) {
  auto task = ParseTaskName("/job:ps/task:3");
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->job_name(), "ps");
  EXPECT_EQ(task->task_id(), 3);
  auto replica = ParseTaskName("/job:worker/replica:0/task:5");
  ASSERT_TRUE(replica.ok());
  EXPECT_EQ(TaskName(*replica), "/job:worker/task:5");
}

TEST(TaskNameTest, Parse_BadNames_InvalidArgumentNamingTheText) {
  for (const char* bad : {"", "worker/3", "/job:/task:1", "/job:w/task:", "/job:w/task:-1",
                          "/job:w/task:1x", "/job:w/replica:x/task:1"}) {
    EXPECT_THAT(ParseTaskName(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("expected /job:<name>/task:<id>")))
        << bad;
  }
}

TEST(TaskNameTest, Summarize_NamesEveryTaskWithRanges) {
  std::vector<proto::CoordinatedTask> tasks;
  for (int id : {12, 3, 7, 8, 9, 10, 11}) tasks.push_back(MakeTask("worker", id));
  tasks.push_back(MakeTask("ps", 0));
  EXPECT_EQ(SummarizeTasks(tasks), "ps/0, worker/[3,7-12]");
  EXPECT_EQ(SummarizeTasks({}), "none");
}

TEST(TaskNameTest, Summarize_ThousandTasksStaysShort) {
  std::vector<proto::CoordinatedTask> tasks;
  for (int id = 0; id < 1000; ++id) {
    if (id != 500) tasks.push_back(MakeTask("worker", id));
  }
  EXPECT_EQ(SummarizeTasks(tasks), "worker/[0-499,501-999]");
}

TEST(TaskNameTest, Ordering_ByJobThenId) {
  EXPECT_TRUE(TaskLess(MakeTask("a", 9), MakeTask("b", 0)));
  EXPECT_TRUE(TaskLess(MakeTask("a", 1), MakeTask("a", 2)));
  EXPECT_FALSE(TaskLess(MakeTask("a", 2), MakeTask("a", 2)));
  EXPECT_TRUE(SameTask(MakeTask("a", 2), MakeTask("a", 2)));
}

}  // namespace
}  // namespace muster
