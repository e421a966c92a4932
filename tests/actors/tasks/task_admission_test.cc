// The task actor's admission decisions on their own: which registrations may take a task
// (claims, reconnects after a lost leader connection, rejoins from ERROR), and what a refusal
// says.
#include "muster/actors/tasks/task_admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

proto::CoordinatedTaskStateInfo Info(proto::CoordinatedTaskState state, uint64_t incarnation) {
  proto::CoordinatedTaskStateInfo info;
  *info.mutable_task() = MakeTask("worker", 3);
  info.set_state(state);
  info.set_incarnation(incarnation);
  return info;
}

proto::RegisterTaskRequest Request(uint64_t incarnation, bool claim = false) {
  proto::RegisterTaskRequest request;
  *request.mutable_source_task() = MakeTask("worker", 3);
  request.set_incarnation(incarnation);
  request.set_claim(claim);
  return request;
}

TEST(TaskAdmissionTest, MayClaim_OnlyATaskNoOtherIncarnationHolds) {
  const auto connected = Info(proto::TASKSTATE_CONNECTED, 7);
  const auto free = Info(proto::TASKSTATE_DISCONNECTED, 0);
  EXPECT_THAT(MayClaim(connected, 0, Request(8)), IsOk());  // not a claim
  EXPECT_THAT(MayClaim(free, 0, Request(8, true)), IsOk());
  EXPECT_THAT(MayClaim(connected, 0, Request(7, true)), IsOk());  // its own holder
  absl::Status taken = MayClaim(connected, 0, Request(8, true));
  EXPECT_THAT(taken, StatusIs(absl::StatusCode::kAlreadyExists,
                              AllOf(HasSubstr("/job:worker/task:3 is held by incarnation 7"),
                                    HasSubstr("Claim another task of the job"))));
  ASSERT_TRUE(GetCoordinationError(taken).has_value());
  EXPECT_EQ(TaskName(GetCoordinationError(taken)->source_task()), "/job:worker/task:3");
  // One waiting in the register barrier holds it too, unless the task is connected.
  EXPECT_THAT(MayClaim(free, 9, Request(8, true)),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("held by incarnation 9")));
  EXPECT_THAT(MayClaim(free, 9, Request(9, true)), IsOk());
  EXPECT_THAT(MayClaim(connected, 9, Request(8, true)),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("held by incarnation 7")));
}

TEST(TaskAdmissionTest, MayReconnect_OnlyTheConnectedIncarnation) {
  EXPECT_THAT(MayReconnect(Info(proto::TASKSTATE_CONNECTED, 7), Request(7)), IsOk());
  EXPECT_THAT(MayReconnect(Info(proto::TASKSTATE_CONNECTED, 7), Request(8)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("/job:worker/task:3 cannot reconnect with incarnation 8"),
                             HasSubstr("TASKSTATE_CONNECTED with incarnation 7"),
                             HasSubstr("restart the task"))));
  absl::Status unknown = MayReconnect(Info(proto::TASKSTATE_DISCONNECTED, 0), Request(7));
  EXPECT_THAT(unknown, StatusIs(absl::StatusCode::kFailedPrecondition,
                                HasSubstr("knows the task as TASKSTATE_DISCONNECTED. ")));
  EXPECT_TRUE(GetCoordinationError(unknown).has_value());
}

TEST(TaskAdmissionTest, MayRejoinFromError_OnlyRecoverableAfterALostConnection) {
  const absl::Status lost = MakeCoordinationError(absl::UnavailableError("heartbeat timeout"));
  EXPECT_TRUE(MayRejoinFromError(true, lost));
  EXPECT_FALSE(MayRejoinFromError(false, lost));
  // Reported by the task itself, or not a lost connection: no.
  EXPECT_FALSE(MayRejoinFromError(true, absl::UnavailableError("no coordination payload")));
  EXPECT_FALSE(MayRejoinFromError(true, MakeCoordinationError(absl::InternalError("crashed"))));
}

}  // namespace
}  // namespace muster
