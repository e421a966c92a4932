// BarrierState and BarrierParticipants: the transitions of one instance, without actors.
#include "muster/actors/barriers/barrier_state.h"

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

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
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

const BarrierClock::time_point kStart{};

proto::CoordinatedTask Worker(int id) { return MakeTask("worker", id); }

std::vector<proto::CoordinatedTask> Workers(int n) {
  std::vector<proto::CoordinatedTask> tasks;
  for (int i = 0; i < n; ++i) tasks.push_back(Worker(i));
  return tasks;
}

// An instance "b"::counter of workers 0..n-1 in a cluster of `cluster` tasks, started by task 0.
BarrierState MakeState(int n, int cluster, int64_t counter = 0,
                       absl::flat_hash_map<int, uint64_t> recoverable = {}) {
  BarrierSpec spec;
  spec.id = "b";
  spec.counter = counter;
  spec.participants = std::make_shared<BarrierParticipants>(Workers(n), cluster);
  spec.recoverable = std::move(recoverable);
  spec.first_task = Worker(0);
  spec.timeout = 10s;
  spec.deadline = kStart + 10s;
  return BarrierState(std::move(spec));
}

proto::BarrierRequest Call(int task, int64_t counter = 0,
                           const std::vector<proto::CoordinatedTask>& tasks = {}) {
  proto::BarrierRequest request;
  request.set_barrier_id("b");
  request.set_barrier_timeout_in_ms(10000);
  for (const auto& t : tasks) *request.add_tasks() = t;
  *request.mutable_source_task() = Worker(task);
  request.set_counter(counter);
  return request;
}

proto::CancelBarrierRequest CancelCall(int task, int64_t counter = 0) {
  proto::CancelBarrierRequest request;
  request.set_barrier_id("b");
  *request.mutable_source_task() = Worker(task);
  request.set_counter(counter);
  return request;
}

proto::CoordinatedTaskStateInfo TaskState(int task, proto::CoordinatedTaskState state,
                                          uint64_t incarnation = 1) {
  proto::CoordinatedTaskStateInfo info;
  *info.mutable_task() = Worker(task);
  info.set_state(state);
  info.set_incarnation(incarnation);
  if (state == proto::TASKSTATE_ERROR) {
    info.set_error_code(static_cast<int>(absl::StatusCode::kUnavailable));
    info.set_error_message("heartbeat timeout");
  }
  return info;
}

TEST(BarrierParticipantsTest, Construct_DuplicatesAndShuffled_EachTaskOnceInTaskOrder) {
  BarrierParticipants participants({Worker(2), Worker(0), Worker(2), MakeTask("ps", 1)}, 8);
  ASSERT_EQ(participants.size(), 3);
  EXPECT_EQ(TaskName(participants.task(0)), "/job:ps/task:1");
  EXPECT_EQ(TaskName(participants.task(1)), "/job:worker/task:0");
  EXPECT_EQ(participants.IndexOf(Worker(2)), 2);
  EXPECT_EQ(participants.IndexOf(Worker(1)), std::nullopt);
  EXPECT_FALSE(participants.whole_cluster());
}

TEST(BarrierParticipantsTest, Matches_SameSetInAnyOrder_TrueOtherwiseFalse) {
  BarrierParticipants participants(Workers(3), 3);
  google::protobuf::RepeatedPtrField<proto::CoordinatedTask> same, missing, duplicated, other;
  for (int id : {2, 0, 1}) *same.Add() = Worker(id);
  for (int id : {0, 1}) *missing.Add() = Worker(id);
  for (int id : {0, 1, 1}) *duplicated.Add() = Worker(id);
  for (int id : {0, 1, 5}) *other.Add() = Worker(id);
  EXPECT_TRUE(participants.Matches(same));
  EXPECT_FALSE(participants.Matches(missing));
  EXPECT_FALSE(participants.Matches(duplicated));
  EXPECT_FALSE(participants.Matches(other));
  EXPECT_TRUE(participants.whole_cluster());
}

TEST(BarrierStateTest, Arrive_EveryParticipant_PassesOnTheLastArrival) {
  BarrierState state = MakeState(3, 3);
  BarrierEffects first = state.Arrive(Call(0));
  EXPECT_EQ(first.park, 0);
  EXPECT_FALSE(first.finished);
  state.Arrive(Call(2));
  EXPECT_EQ(state.arrived(), 2);
  BarrierEffects last = state.Arrive(Call(1));
  EXPECT_EQ(last.park, 1);
  EXPECT_TRUE(last.finished);
  EXPECT_THAT(state.result(), IsOk());
  EXPECT_TRUE(state.finished());
}

TEST(BarrierStateTest, Arrive_SameTaskAgain_CancelsItsEarlierCallOnly) {
  BarrierState state = MakeState(2, 2);
  state.Arrive(Call(0));
  BarrierEffects again = state.Arrive(Call(0));
  EXPECT_EQ(again.park, 0);
  ASSERT_EQ(again.cancel.size(), 1u);
  EXPECT_EQ(again.cancel[0].first, 0);
  EXPECT_THAT(again.cancel[0].second,
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("more recent barrier call")));
  EXPECT_EQ(state.arrived(), 1);
  EXPECT_FALSE(state.finished());
}

TEST(BarrierStateTest, Arrive_CounterMismatchWhileWaiting_InternalForEveryone) {
  BarrierState state = MakeState(3, 3, /*counter=*/4);
  state.Arrive(Call(0, 4));
  BarrierEffects effects = state.Arrive(Call(1, 6));
  EXPECT_TRUE(effects.finished);
  EXPECT_THAT(state.result(), StatusIs(absl::StatusCode::kInternal,
                                       AllOf(HasSubstr("Barrier (b::6)"),
                                             HasSubstr("4-th instance"), HasSubstr("too quick"))));
  EXPECT_EQ(GetBarrierCounter(state.result()), 4);
  ASSERT_TRUE(effects.reply.has_value());
  EXPECT_THAT(*effects.reply, StatusIs(absl::StatusCode::kInternal));
}

TEST(BarrierStateTest, Arrive_CounterZeroAgainstLaterInstance_ExplainsRestart) {
  BarrierState state = MakeState(2, 2, /*counter=*/3);
  state.Arrive(Call(1, 0));
  EXPECT_THAT(state.result(), StatusIs(absl::StatusCode::kInternal, HasSubstr("restarted")));
}

TEST(BarrierStateTest, Arrive_EmptyListForSubsetBarrier_InvalidArgumentForEveryone) {
  BarrierState state = MakeState(2, 4);
  state.Arrive(Call(0, 0, Workers(2)));
  BarrierEffects effects = state.Arrive(Call(1));
  EXPECT_TRUE(effects.finished);
  EXPECT_THAT(state.result(), StatusIs(absl::StatusCode::kInvalidArgument,
                                       AllOf(HasSubstr("No tasks were specified"),
                                             HasSubstr("b::0"), HasSubstr("worker/[0-1]"))));
}

TEST(BarrierStateTest, Arrive_ConflictingList_InvalidArgumentNamingBothLists) {
  BarrierState state = MakeState(2, 4);
  BarrierEffects effects = state.Arrive(Call(1, 0, {Worker(1), Worker(3)}));
  EXPECT_TRUE(effects.finished);
  EXPECT_THAT(state.result(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("Conflicting tasks"), HasSubstr("worker/[1,3]"),
                             HasSubstr("worker/[0-1]"))));
}

TEST(BarrierStateTest, Arrive_NonParticipant_InvalidArgumentForEveryone) {
  BarrierState state = MakeState(2, 4);
  state.Arrive(Call(0, 0, Workers(2)));
  BarrierEffects effects = state.Arrive(Call(3, 0, Workers(2)));
  EXPECT_TRUE(effects.finished);
  EXPECT_EQ(effects.reply, state.result());
  EXPECT_THAT(state.result(), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("non-participating task (/job:worker/task:3)")));
}

TEST(BarrierStateTest, Arrive_NonParticipantOfWholeCluster_InvalidArgumentNamingIt) {
  BarrierState state = MakeState(2, 2);
  state.Arrive(Call(7));
  EXPECT_THAT(state.result(), StatusIs(absl::StatusCode::kInvalidArgument,
                                       AllOf(HasSubstr("non-participating task"),
                                             HasSubstr("/job:worker/task:7"))));
}

TEST(BarrierStateTest, Arrive_AfterFinish_StoredResultOrCallerOnlyMismatch) {
  BarrierState state = MakeState(1, 1, /*counter=*/2);
  state.Arrive(Call(0, 2));
  BarrierEffects same = state.Arrive(Call(0, 2));
  ASSERT_TRUE(same.reply.has_value());
  EXPECT_THAT(*same.reply, IsOk());
  EXPECT_FALSE(same.finished);
  BarrierEffects other = state.Arrive(Call(0, 7));
  EXPECT_THAT(*other.reply, StatusIs(absl::StatusCode::kInternal, HasSubstr("too quick")));
  EXPECT_THAT(state.result(), IsOk());
}

TEST(BarrierStateTest, DeadlineReached_OneMillisecondEarly_NoEffect) {
  BarrierState state = MakeState(2, 2);
  state.Arrive(Call(0));
  BarrierEffects effects = state.DeadlineReached(kStart + 10s - 1ms);
  EXPECT_FALSE(effects.finished);
  EXPECT_FALSE(state.finished());
}

TEST(BarrierStateTest, DeadlineReached_NamesEveryMissingTaskAndFirstTask) {
  BarrierState state = MakeState(13, 13);
  for (int id : {0, 1, 2, 4, 5, 6}) state.Arrive(Call(id));
  BarrierEffects effects = state.DeadlineReached(kStart + 10s);
  EXPECT_TRUE(effects.finished);
  EXPECT_THAT(state.result(),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       AllOf(HasSubstr("b::0"), HasSubstr("6/13"),
                             HasSubstr("first task at the barrier: /job:worker/task:0"),
                             HasSubstr("(7): worker/[3,7-12]"))));
  EXPECT_EQ(GetBarrierCounter(state.result()), 0);
}

TEST(BarrierStateTest, Cancel_Waiting_CancelledForEveryoneOkForCaller) {
  BarrierState state = MakeState(2, 2);
  state.Arrive(Call(0));
  BarrierEffects effects = state.Cancel(CancelCall(1));
  EXPECT_TRUE(effects.finished);
  EXPECT_THAT(*effects.reply, IsOk());
  EXPECT_THAT(state.result(),
              StatusIs(absl::StatusCode::kCancelled,
                       HasSubstr("Barrier (b::0) is cancelled by task: /job:worker/task:1")));
}

TEST(BarrierStateTest, Cancel_AfterPass_FailedPreconditionWithCode) {
  BarrierState state = MakeState(1, 1);
  state.Arrive(Call(0));
  BarrierEffects effects = state.Cancel(CancelCall(0));
  EXPECT_THAT(*effects.reply, StatusIs(absl::StatusCode::kFailedPrecondition,
                                       HasSubstr("already been passed with status code: OK")));
  EXPECT_THAT(state.result(), IsOk());
}

TEST(BarrierStateTest, Cancel_WrongCounter_FailedPreconditionAndKeepsWaiting) {
  BarrierState state = MakeState(2, 2, /*counter=*/1);
  BarrierEffects effects = state.Cancel(CancelCall(0, 0));
  EXPECT_THAT(*effects.reply,
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("1-th instance")));
  EXPECT_FALSE(state.finished());
}

TEST(BarrierStateTest, TaskStateChanged_ParticipantError_InternalNamingTaskAndReason) {
  BarrierState state = MakeState(2, 2);
  state.Arrive(Call(0));
  BarrierEffects effects = state.TaskStateChanged(TaskState(1, proto::TASKSTATE_ERROR));
  EXPECT_TRUE(effects.finished);
  EXPECT_THAT(state.result(), StatusIs(absl::StatusCode::kInternal,
                                       AllOf(HasSubstr("/job:worker/task:1"), HasSubstr("ERROR"),
                                             HasSubstr("heartbeat timeout"), HasSubstr("b::0"))));
}

TEST(BarrierStateTest, TaskStateChanged_ParticipantDied_OneSentenceBreakAndFailedTaskPayload) {
  BarrierState state = MakeState(3, 3);
  state.Arrive(Call(0));
  proto::CoordinatedTaskStateInfo died = TaskState(2, proto::TASKSTATE_ERROR);
  died.set_error_message("Task /job:worker/task:2: connection to worker lost. Restart it.");
  EXPECT_TRUE(state.TaskStateChanged(died).finished);
  EXPECT_THAT(state.result(),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("Restart it. Barrier Id: b::0, Task: /job:worker/task:2"),
                             Not(HasSubstr("..")))));
  std::optional<proto::CoordinatedTask> failed = FailedTaskOf(state.result());
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(TaskName(*failed), "/job:worker/task:2");
  EXPECT_EQ(GetBarrierCounter(state.result()), 0);
}

TEST(BarrierStateTest, TasksInErrorError_OneSentenceBreakAndFailedTaskPayload) {
  proto::CoordinatedTaskStateInfo first = TaskState(1, proto::TASKSTATE_ERROR);
  first.set_error_message("connection to worker lost.");
  std::vector<proto::CoordinatedTask> in_error = {Worker(1), Worker(2)};
  absl::Status status = BarrierTasksInErrorError("b", 0, in_error, first);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInternal,
                               AllOf(HasSubstr("connection to worker lost. Reset or restart"),
                                     Not(HasSubstr("..")))));
  std::optional<proto::CoordinatedTask> failed = FailedTaskOf(status);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(TaskName(*failed), "/job:worker/task:1");
}

TEST(BarrierStateTest, OtherFailures_CarryNoFailedTask) {
  BarrierState state = MakeState(2, 2);
  state.Arrive(Call(0));
  state.DeadlineReached(kStart + 10s);
  EXPECT_THAT(state.result(), StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_FALSE(FailedTaskOf(state.result()).has_value());
}

TEST(BarrierStateTest, TaskStateChanged_ParticipantDisconnected_Internal) {
  BarrierState state = MakeState(2, 2);
  state.TaskStateChanged(TaskState(0, proto::TASKSTATE_DISCONNECTED));
  EXPECT_THAT(state.result(),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("task disconnected")));
}

TEST(BarrierStateTest, TaskStateChanged_ConnectedOrNonParticipant_NoEffect) {
  BarrierState state = MakeState(2, 4);
  EXPECT_FALSE(state.TaskStateChanged(TaskState(0, proto::TASKSTATE_CONNECTED)).finished);
  EXPECT_FALSE(state.TaskStateChanged(TaskState(3, proto::TASKSTATE_ERROR)).finished);
  EXPECT_FALSE(state.finished());
}

TEST(BarrierStateTest, TaskStateChanged_RecoverableError_CancelsStaleCallKeepsWaiting) {
  BarrierState state = MakeState(2, 2, 0, {{1, 5}});
  state.Arrive(Call(1));
  BarrierEffects effects = state.TaskStateChanged(TaskState(1, proto::TASKSTATE_ERROR, 5));
  EXPECT_FALSE(effects.finished);
  ASSERT_EQ(effects.cancel.size(), 1u);
  EXPECT_THAT(effects.cancel[0].second,
              StatusIs(absl::StatusCode::kCancelled,
                       AllOf(HasSubstr("Stale barrier invocation is cancelled because"),
                             HasSubstr("/job:worker/task:1"))));
  EXPECT_EQ(state.arrived(), 0);
  state.Arrive(Call(0));
  EXPECT_TRUE(state.Arrive(Call(1)).finished);
  EXPECT_THAT(state.result(), IsOk());
}

TEST(BarrierStateTest, TaskStateChanged_RecoverableNewIncarnation_CancelsSameDoesNot) {
  BarrierState state = MakeState(2, 2, 0, {{1, 5}});
  state.Arrive(Call(1));
  EXPECT_TRUE(state.TaskStateChanged(TaskState(1, proto::TASKSTATE_CONNECTED, 5)).cancel.empty());
  BarrierEffects effects = state.TaskStateChanged(TaskState(1, proto::TASKSTATE_CONNECTED, 6));
  ASSERT_EQ(effects.cancel.size(), 1u);
  EXPECT_THAT(effects.cancel[0].second,
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("incarnation 6")));
  EXPECT_FALSE(state.finished());
}

TEST(BarrierStateTest, Shutdown_Waiting_AbortedNamingBarrier) {
  BarrierState state = MakeState(2, 2);
  EXPECT_TRUE(state.Shutdown().finished);
  EXPECT_THAT(state.result(),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("shutting down. Barrier_id: b::0")));
  EXPECT_FALSE(state.Shutdown().finished);
}

TEST(BarrierStateTest, Info_Open_ListsWaitingTasksUntilFinished) {
  BarrierState state = MakeState(3, 3);
  state.Arrive(Call(1));
  std::optional<proto::BarrierInfo> info = state.Info(kStart + 4s);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->barrier_id(), "b");
  EXPECT_EQ(info->deadline_in_ms(), 6000);
  EXPECT_EQ(info->arrived(), 1);
  EXPECT_EQ(info->total(), 3);
  EXPECT_EQ(TaskName(info->first_task()), "/job:worker/task:0");
  std::vector<std::string> waiting;
  for (const auto& task : info->waiting_for()) waiting.push_back(TaskName(task));
  EXPECT_THAT(waiting, ElementsAre("/job:worker/task:0", "/job:worker/task:2"));
  state.Shutdown();
  EXPECT_FALSE(state.Info(kStart).has_value());
}

TEST(BarrierStateTest, Info_WaitedMs_SinceTheFirstCallAndDeadlineAddUpToTheTimeout) {
  BarrierState state = MakeState(3, 3);
  EXPECT_EQ(state.Info(kStart)->waited_ms(), 0);
  std::optional<proto::BarrierInfo> info = state.Info(kStart + 2500ms);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->waited_ms(), 2500);
  EXPECT_EQ(info->deadline_in_ms(), 7500);
  EXPECT_EQ(state.Info(kStart + 9999ms)->waited_ms(), 9999);
}

TEST(BarrierErrorsTest, CounterMismatchWithoutInstance_PayloadMinusOne) {
  absl::Status status = BarrierCounterMismatchError("b", 3, -1, Worker(0));
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInternal,
                               AllOf(HasSubstr("no instance"), HasSubstr("restarted"))));
  EXPECT_EQ(GetBarrierCounter(status), -1);
  EXPECT_TRUE(GetCoordinationError(status).has_value());
}

}  // namespace
}  // namespace muster
