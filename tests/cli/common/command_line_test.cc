// The muster command line: Abseil flags set through ParseCommandLine with every accepted form,
// repeated flags accumulating, per-subcommand flag sets, and the serve options they describe.
#include "muster/tools/common/command_line.h"

#include <absl/flags/declare.h>
#include <absl/flags/flag.h>
#include <absl/flags/reflection.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/task_name.h"
#include "muster/tools/common/cli_common.h"
#include "muster/tools/job/status_command.h"
#include "muster/tools/kv/kv_command.h"
#include "muster/tools/serve/serve_command.h"
#include "tests/testing/status_matchers.h"

ABSL_DECLARE_FLAG(std::vector<std::string>, job);
ABSL_DECLARE_FLAG(std::vector<std::string>, recoverable_job);
ABSL_DECLARE_FLAG(int32_t, port);
ABSL_DECLARE_FLAG(absl::Duration, heartbeat_timeout);
ABSL_DECLARE_FLAG(bool, overwrite);
ABSL_DECLARE_FLAG(bool, recursive);

namespace muster::cli {
namespace {

using ::muster::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class CommandLineTest : public ::testing::Test {
 protected:
  // Every test starts from the flags' defaults and leaves them so.
  absl::FlagSaver saver_;
};

TEST_F(CommandLineTest, RepeatedJob_Accumulates) {
  ASSERT_TRUE(ParseCommandLine(ServeSpec(), {"--job", "worker=4", "--job=ps=2"}).ok());
  EXPECT_THAT(absl::GetFlag(FLAGS_job), ElementsAre("worker=4", "ps=2"));
}

TEST_F(CommandLineTest, RepeatedJob_CombinesWithCommaLists) {
  ASSERT_TRUE(ParseCommandLine(ServeSpec(), {"--job=worker=4,ps=2", "--job", "eval=1"}).ok());
  EXPECT_THAT(absl::GetFlag(FLAGS_job), ElementsAre("worker=4", "ps=2", "eval=1"));
}

TEST_F(CommandLineTest, NonRepeatedFlag_KeepsTheLastValue) {
  ASSERT_TRUE(ParseCommandLine(ServeSpec(), {"--port", "1", "--port=2"}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_port), 2);
}

TEST_F(CommandLineTest, HyphenatedName_SetsTheUnderscoreFlag) {
  ASSERT_TRUE(ParseCommandLine(ServeSpec(), {"--heartbeat-timeout", "3s"}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_heartbeat_timeout), absl::Seconds(3));
  ASSERT_TRUE(ParseCommandLine(ServeSpec(), {"-heartbeat_timeout=4s"}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_heartbeat_timeout), absl::Seconds(4));
}

TEST_F(CommandLineTest, NoPrefix_SetsABooleanFalse) {
  auto parsed = ParseCommandLine(*KvSpec("put"), {"--no-overwrite", "k", "v"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(absl::GetFlag(FLAGS_overwrite));
  EXPECT_THAT(parsed->args, ElementsAre("k", "v"));
}

TEST_F(CommandLineTest, BooleanFlag_DoesNotTakeTheNextArgument) {
  auto parsed = ParseCommandLine(*KvSpec("rm"), {"--recursive", "dir"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(absl::GetFlag(FLAGS_recursive));
  EXPECT_THAT(parsed->args, ElementsAre("dir"));
}

TEST_F(CommandLineTest, ShortAlias_SetsItsFlag) {
  auto parsed = ParseCommandLine(*KvSpec("rm"), {"dir", "-r"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(absl::GetFlag(FLAGS_recursive));
  EXPECT_THAT(parsed->args, ElementsAre("dir"));
}

TEST_F(CommandLineTest, DoubleDash_EndsTheFlags) {
  auto parsed = ParseCommandLine(*KvSpec("put"), {"--leader=h:1", "--", "--key", "-v"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(absl::GetFlag(FLAGS_leader), "h:1");
  EXPECT_THAT(parsed->args, ElementsAre("--key", "-v"));
}

TEST_F(CommandLineTest, OptionalDuration_IsUnsetUntilGiven) {
  ASSERT_TRUE(ParseCommandLine(StatusSpec(), {}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_timeout), std::nullopt);
  ASSERT_TRUE(ParseCommandLine(StatusSpec(), {"--timeout", "750ms"}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_timeout), absl::Milliseconds(750));
}

TEST_F(CommandLineTest, FlagOfAnotherCommand_IsUnknown) {
  EXPECT_THAT(ParseCommandLine(*KvSpec("get"), {"--job", "x", "k"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown flag --job for `muster kv get`")));
}

TEST_F(CommandLineTest, AbseilBuiltInFlag_IsUnknown) {
  EXPECT_THAT(ParseCommandLine(StatusSpec(), {"--flagfile=x"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown flag --flagfile")));
}

TEST_F(CommandLineTest, NegatedNonBoolean_IsUnknown) {
  EXPECT_THAT(ParseCommandLine(StatusSpec(), {"--no-leader"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown flag --no-leader")));
}

TEST_F(CommandLineTest, MissingValue_NamesTheFlag) {
  EXPECT_THAT(
      ParseCommandLine(StatusSpec(), {"--leader"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("flag --leader needs a value")));
}

TEST_F(CommandLineTest, BadValue_NamesValueAndFlagAndLeavesTheFlag) {
  EXPECT_THAT(ParseCommandLine(ServeSpec(), {"--heartbeat-timeout=soon"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bad value \"soon\" for --heartbeat-timeout")));
  EXPECT_EQ(absl::GetFlag(FLAGS_heartbeat_timeout), absl::Seconds(10));
}

TEST_F(CommandLineTest, WrongArgumentCount_GivesTheUsage) {
  EXPECT_THAT(ParseCommandLine(*KvSpec("put"), {"k"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected 2 argument(s), got 1; usage: muster kv put")));
}

TEST_F(CommandLineTest, Help_WinsOverOtherErrors) {
  auto parsed = ParseCommandLine(StatusSpec(), {"--bogus", "extra", "-h"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->help);
}

TEST_F(CommandLineTest, HelpAfterDoubleDash_IsAnArgument) {
  auto parsed = ParseCommandLine(*KvSpec("get"), {"--", "--help"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->help);
  EXPECT_THAT(parsed->args, ElementsAre("--help"));
}

TEST_F(CommandLineTest, HelpText_ListsFlagsWithDefaults) {
  std::string serve = HelpText(ServeSpec());
  EXPECT_THAT(serve, HasSubstr("usage: muster serve --job NAME=TASKS"));
  EXPECT_THAT(serve, HasSubstr("--heartbeat-timeout VALUE  (default: 10s)"));
  EXPECT_THAT(serve, HasSubstr("--register-with-barrier\n"));
  EXPECT_THAT(HelpText(*KvSpec("put")), HasSubstr("--no-overwrite\n"));
  EXPECT_THAT(HelpText(*KvSpec("rm")), HasSubstr("-r, --recursive\n"));
}

TEST_F(CommandLineTest, ServeOptions_CarryJobsAndTimeouts) {
  ASSERT_TRUE(ParseCommandLine(ServeSpec(),
                               {"--job=worker=4", "--job=ps=2", "--heartbeat-timeout=2s",
                                "--register-with-barrier", "--register-timeout=30s",
                                "--shutdown-barrier-timeout=5s", "--connection-loss-grace=1500ms"})
                  .ok());
  auto options = ServeOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  const auto& config = options->config;
  ASSERT_EQ(config.coordinated_job_list_size(), 2);
  EXPECT_EQ(config.coordinated_job_list(1).name(), "ps");
  EXPECT_EQ(config.coordinated_job_list(1).num_tasks(), 2);
  EXPECT_EQ(config.heartbeat_timeout_in_ms(), 2000);
  EXPECT_TRUE(config.cluster_register_with_barrier());
  EXPECT_EQ(config.cluster_register_timeout_in_ms(), 30000);
  EXPECT_EQ(config.shutdown_barrier_timeout_in_ms(), 5000);
  EXPECT_EQ(config.connection_loss_grace_period_in_ms(), 1500);
  EXPECT_EQ(options->policy->Describe(), "fate-sharing");
  EXPECT_NE(options->incarnation, 0u);
}

TEST_F(CommandLineTest, ServeOptions_RecoverableJobDefaultsToTheRecoverablePolicy) {
  ASSERT_TRUE(
      ParseCommandLine(ServeSpec(), {"--job=worker=2,eval=1", "--recoverable-job=eval"}).ok());
  auto options = ServeOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_THAT(options->config.recoverable_jobs(), ElementsAre("eval"));
  EXPECT_TRUE(options->policy->IsRecoverable(MakeTask("eval", 0)));
  EXPECT_FALSE(options->policy->IsRecoverable(MakeTask("worker", 0)));
}

TEST_F(CommandLineTest, ServeOptions_JobScopedPolicy) {
  ASSERT_TRUE(ParseCommandLine(ServeSpec(), {"--job=worker=2", "--policy", "job-scoped"}).ok());
  auto options = ServeOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->policy->Describe(), "job-scoped");
}

TEST_F(CommandLineTest, ServeOptions_RegisterTimeoutWithoutBarrier_AcceptedLikeTheLibrary) {
  absl::FlagSaver saver;
  ASSERT_TRUE(ParseCommandLine(ServeSpec(), {"--job=worker=1", "--register-timeout=5s"}).ok());
  auto options = ServeOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->config.cluster_register_with_barrier());
  EXPECT_EQ(options->config.cluster_register_timeout_in_ms(), 5000);
}

TEST_F(CommandLineTest, ServeOptions_RejectBadCombinations) {
  struct Case {
    std::vector<std::string> argv;
    std::string message;
  };
  std::vector<Case> cases = {
      {{}, "no job given"},
      {{"--job=worker=1", "--policy=recoverable"}, "needs the jobs to tolerate"},
      {{"--job=worker=1", "--policy=best-effort"}, "unknown --policy \"best-effort\""},
      {{"--job=worker=1", "--recoverable-job=ps"}, "--recoverable-job ps is not one of the jobs"},
      {{"--job=worker=1", "--heartbeat-timeout=0s"}, "--heartbeat-timeout must be positive"},
      {{"--job=worker=1", "--connection-loss-grace=-1s"}, "may not be negative"},
      {{"--job=worker=1", "--port=70000"}, "--port must be from 0 to 65535"},
      {{"--job=worker=1,worker=2"}, "job \"worker\" is given twice"},
  };
  for (const Case& c : cases) {
    absl::FlagSaver saver;
    ASSERT_TRUE(ParseCommandLine(ServeSpec(), c.argv).ok());
    EXPECT_THAT(ServeOptionsFromFlags(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.message;
  }
}

}  // namespace
}  // namespace muster::cli
