// Job specifications: "name=tasks" entries, comma lists, and the errors that name the entry.
#include "muster/net/leader/job_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::StatusIs;
using ::testing::HasSubstr;

TEST(JobSpecTest, Entry_GivesNameAndTaskCount) {
  auto job = ParseJobSpec("worker=4");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->name(), "worker");
  EXPECT_EQ(job->num_tasks(), 4);
}

TEST(JobSpecTest, EntriesAndCommaLists_KeepTheirOrder) {
  auto jobs = ParseJobSpecs({"worker=4,ps=2", "eval=1"});
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ((*jobs)[0].name(), "worker");
  EXPECT_EQ((*jobs)[1].name(), "ps");
  EXPECT_EQ((*jobs)[2].num_tasks(), 1);
}

TEST(JobSpecTest, ZeroTasks_IsInvalidNamingTheEntry) {
  EXPECT_THAT(ParseJobSpec("worker=0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bad job \"worker=0\": the number of tasks must be a positive")));
}

TEST(JobSpecTest, MissingEquals_IsInvalid) {
  EXPECT_THAT(ParseJobSpec("worker"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected NAME=TASKS")));
}

TEST(JobSpecTest, NameWithSlash_IsInvalid) {
  EXPECT_THAT(ParseJobSpec("a/b=1"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("may not contain '/'")));
}

TEST(JobSpecTest, SameJobTwice_IsInvalid) {
  EXPECT_THAT(ParseJobSpecs({"worker=1", "worker=2"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("given twice")));
}

TEST(JobSpecTest, NoJob_IsInvalid) {
  EXPECT_THAT(ParseJobSpecs({}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no job given")));
}

TEST(JobSpecTest, AddJobSpecs_LeavesTheConfigUnchangedOnError) {
  proto::CoordinationServiceConfig config;
  EXPECT_FALSE(AddJobSpecs({"worker=2", "ps=x"}, &config).ok());
  EXPECT_EQ(config.coordinated_job_list_size(), 0);
  EXPECT_TRUE(AddJobSpecs({"worker=2"}, &config).ok());
  EXPECT_EQ(config.coordinated_job_list_size(), 1);
}

}  // namespace
}  // namespace muster
