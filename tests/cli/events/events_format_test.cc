// What `muster events` and `muster status --bring-up` print, without processes: an event in
// words (one line whatever its texts hold) and the registration timeline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/task_name.h"
#include "muster/tools/events/events_command.h"
#include "muster/tools/job/status_report.h"

namespace muster::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// 2024-05-01T12:00:00.250Z
constexpr int64_t kUnixMs = 1714564800250;

TEST(FormatEventTest, TaskFailed_TimeKindTaskIncarnationAndCause) {
  proto::JobEvent event;
  event.set_unix_ms(kUnixMs);
  event.set_kind(proto::TASK_FAILED);
  *event.mutable_task() = MakeTask("worker", 1);
  event.set_incarnation(0x2a);
  event.set_state(proto::TASKSTATE_ERROR);
  event.set_error_code(static_cast<int>(absl::StatusCode::kUnavailable));
  event.set_error_message("connection to worker lost\nsecond line\x1b[31m");
  EXPECT_EQ(FormatEvent(event, absl::UTCTimeZone()),
            "2024-05-01T12:00:00.250+00:00  TASK_FAILED         /job:worker/task:1  incarnation "
            "0x000000000000002a; UNAVAILABLE: connection to worker lost\\nsecond line\\033[31m");
}

TEST(FormatEventTest, BarrierFailed_NamesWhoWasMissingAndHowMany) {
  proto::JobEvent event;
  event.set_unix_ms(kUnixMs);
  event.set_kind(proto::BARRIER_FAILED);
  event.set_barrier_id("epoch");
  event.set_barrier_counter(3);
  event.set_error_code(static_cast<int>(absl::StatusCode::kDeadlineExceeded));
  event.set_error_message("timed out");
  *event.add_waiting_for() = MakeTask("worker", 2);
  *event.add_waiting_for() = MakeTask("worker", 3);
  event.set_waiting_count(70);
  EXPECT_EQ(FormatEvent(event, absl::UTCTimeZone()),
            "2024-05-01T12:00:00.250+00:00  BARRIER_FAILED      barrier epoch::3  "
            "DEADLINE_EXCEEDED: timed out; waiting for 70: worker/[2-3], ...");
}

TEST(FormatEventTest, RoundStarted_RoundAndPolicy) {
  proto::JobEvent event;
  event.set_unix_ms(kUnixMs);
  event.set_kind(proto::ROUND_STARTED);
  *event.mutable_task() = MakeTask("worker", 0);
  event.set_round(2);
  event.set_detail("one-for-all restarts");
  EXPECT_EQ(FormatEvent(event, absl::UTCTimeZone()),
            "2024-05-01T12:00:00.250+00:00  ROUND_STARTED       /job:worker/task:0  round 2; "
            "one-for-all restarts");
}

proto::CoordinatedTaskStateInfo Connected(int id, int64_t age_ms) {
  proto::CoordinatedTaskStateInfo info;
  *info.mutable_task() = MakeTask("worker", id);
  info.set_state(proto::TASKSTATE_CONNECTED);
  info.set_connected_age_ms(age_ms);
  return info;
}

TEST(RenderBringUpTest, FirstMedianAndTheLastTenAgainstTheMedian) {
  StatusReport report;
  report.set_leader("127.0.0.1:7400");
  // Task i registered 20.0 - 0.1 i seconds ago (i < 12), task 12 17.0 s ago, task 13 never.
  for (int id = 0; id < 12; ++id) *report.add_tasks() = Connected(id, 20'000 - 100 * id);
  *report.add_tasks() = Connected(12, 17'000);
  proto::CoordinatedTaskStateInfo missing;
  *missing.mutable_task() = MakeTask("worker", 13);
  missing.set_state(proto::TASKSTATE_DISCONNECTED);
  missing.set_connected_age_ms(-1);
  *report.add_tasks() = missing;
  std::string text = RenderBringUp(report);
  EXPECT_THAT(text, HasSubstr("leader 127.0.0.1:7400: 13 of 14 tasks connected"));
  EXPECT_THAT(text, HasSubstr("first registered     /job:worker/task:0  20.0s ago"));
  // Ages sorted: 20.0 19.9 ... 18.9 (12 tasks) and 17.0; the 7th of 13 is 19.4 s.
  EXPECT_THAT(text, HasSubstr("median registration                      19.4s ago (+0.6s after "
                              "the first)"));
  EXPECT_THAT(text, HasSubstr("LAST TO REGISTER (10 of 13)"));
  EXPECT_THAT(text, HasSubstr("/job:worker/task:12  17.0s ago   +2.4s after the median"));
  EXPECT_THAT(text, HasSubstr("/job:worker/task:6   19.4s ago   at the median"));
  EXPECT_THAT(text, HasSubstr("/job:worker/task:3   19.7s ago   0.3s before the median"));
  EXPECT_THAT(text, Not(HasSubstr("/job:worker/task:2 ")));  // not among the last 10
  EXPECT_THAT(text, HasSubstr("NOT CONNECTED (1): worker/13"));
  // Latest first.
  EXPECT_LT(text.find("/job:worker/task:12 "), text.find("/job:worker/task:11 "));
}

TEST(RenderBringUpTest, NobodyConnected_SaysSo) {
  StatusReport report;
  report.set_leader("127.0.0.1:7400");
  proto::CoordinatedTaskStateInfo info;
  *info.mutable_task() = MakeTask("worker", 0);
  info.set_state(proto::TASKSTATE_DISCONNECTED);
  info.set_connected_age_ms(-1);
  *report.add_tasks() = info;
  EXPECT_EQ(RenderBringUp(report),
            "leader 127.0.0.1:7400: 0 of 1 tasks connected\n\nno connected task yet\n\n"
            "NOT CONNECTED (1): worker/0\n");
}

}  // namespace
}  // namespace muster::cli
