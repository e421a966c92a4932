// Job health at the coordinator, on simulated time: stuck tasks found from the steps their
// heartbeats carry, the preemption protocol, barrier progress, and ephemeral keys deleted when
// their writer's incarnation ends.
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/status/status_codec.h"
#include "tests/actors/leader_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

class HealthTest : public LeaderTest {
 protected:
  static proto::CoordinationServiceConfig StuckConfig(int workers, int64_t stuck_after_ms,
                                                      int64_t max_step_lag) {
    proto::CoordinationServiceConfig config = Config(workers);
    config.set_heartbeat_timeout_in_ms(2'000);  // beats every 1 s: the stall rule's grace
    config.set_stuck_after_ms(stuck_after_ms);
    config.set_max_step_lag(max_step_lag);
    return config;
  }

  // Registers worker 0..n-1 with incarnation 10 + id, each with its own recording agent.
  void RegisterWorkers(int n) {
    reports_.resize(n);
    for (int id = 0; id < n; ++id) {
      ASSERT_THAT(Register("worker", id, 10 + id, Agent(&reports_[id])), IsOk());
    }
  }

  absl::StatusOr<proto::HeartbeatResponse> Beat(int id, int64_t step) {
    proto::HeartbeatRequest request;
    *request.mutable_source_task() = MakeTask("worker", id);
    request.set_incarnation(10 + id);
    request.set_step(step);
    return Call<proto::HeartbeatResponse>(leader_, request);
  }

  proto::InsertKeyValueRequest Ephemeral(const std::string& key, int id) {
    proto::InsertKeyValueRequest request;
    request.mutable_kv()->set_key(key);
    request.mutable_kv()->set_value("v");
    request.set_ephemeral(true);
    *request.mutable_source_task() = MakeTask("worker", id);
    return request;
  }

  absl::Status TryGet(const std::string& key) {
    proto::TryGetKeyValueRequest request;
    request.set_key(key);
    return Call<proto::TryGetKeyValueResponse>(leader_, request).status();
  }

  std::vector<Reports> reports_;
};

TEST_F(HealthTest, StalledTask_FailsWithTaskStuckAndTheOthersAreTold) {
  Spawn(StuckConfig(3, 2'000, 0));
  RegisterWorkers(3);
  for (int id = 0; id < 3; ++id) ASSERT_THAT(Beat(id, 5), IsOk());
  // Workers 0 and 1 advance every 450 ms, past worker 2 at 0.45 s; worker 2 stays at step 5
  // (its beats keep flowing).
  for (int64_t step = 6; step <= 12; ++step) {
    AdvanceTime(450ms);
    ASSERT_THAT(Beat(0, step), IsOk());
    ASSERT_THAT(Beat(1, step), IsOk());
    ASSERT_THAT(Beat(2, 5), IsOk());
  }
  EXPECT_EQ(State("worker", 2).state(), proto::TASKSTATE_CONNECTED);  // 3.15 s
  AdvanceTime(450ms);  // 3.6 s: the check at 3.5 s, the first after 0.45 s + 2 s + 1 s (grace)
  proto::CoordinatedTaskStateInfo state = State("worker", 2);
  ASSERT_EQ(state.state(), proto::TASKSTATE_ERROR);
  absl::Status error = StatusFromFields(state);
  EXPECT_EQ(error.code(), Code::kDeadlineExceeded);
  EXPECT_THAT(error.message(), HasSubstr("/job:worker/task:2 is stuck: its step 5"));
  auto stuck = GetTaskStuck(error);
  ASSERT_TRUE(stuck.has_value());
  EXPECT_EQ(stuck->reason(), proto::TaskStuck::STALLED);
  EXPECT_EQ(stuck->step(), 5);
  EXPECT_EQ(stuck->min_other_step(), 12);
  EXPECT_EQ(stuck->max_other_step(), 12);
  EXPECT_EQ(stuck->stalled_for_ms(), 3'500);  // the check that ran at 3.5 s
  ASSERT_EQ(reports_[0]->size(), 1u);
  EXPECT_TRUE((*reports_[0])[0].error_payload().has_stuck());
  EXPECT_EQ((*reports_[0])[0].error_code(), static_cast<int>(Code::kDeadlineExceeded));
  ASSERT_EQ(reports_[2]->size(), 1u);  // the stuck task hears it too, with the same report
  EXPECT_EQ((*reports_[2])[0].error_payload().stuck().step(), 5);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);  // fate-sharing tells
  EXPECT_THAT(Beat(2, 5), StatusIs(Code::kAborted));  // the stuck task learns on its next beat
}

TEST_F(HealthTest, AllAdvancingTogether_NobodyStuck) {
  Spawn(StuckConfig(3, 1'000, 3));
  RegisterWorkers(3);
  for (int64_t step = 0; step < 20; ++step) {
    for (int id = 0; id < 3; ++id) ASSERT_THAT(Beat(id, step), IsOk());
    AdvanceTime(400ms);
  }
  for (int id = 0; id < 3; ++id) {
    EXPECT_EQ(State("worker", id).state(), proto::TASKSTATE_CONNECTED) << id;
    EXPECT_TRUE(reports_[id]->empty()) << id;
  }
}

TEST_F(HealthTest, AllPaused_NobodyStuck) {
  Spawn(StuckConfig(3, 1'000, 0));
  RegisterWorkers(3);
  for (int id = 0; id < 3; ++id) ASSERT_THAT(Beat(id, 7), IsOk());
  for (int i = 0; i < 10; ++i) {  // a long checkpoint: beats go on, steps do not
    AdvanceTime(1s);
    for (int id = 0; id < 3; ++id) ASSERT_THAT(Beat(id, 7), IsOk());
  }
  for (int id = 0; id < 3; ++id) {
    EXPECT_EQ(State("worker", id).state(), proto::TASKSTATE_CONNECTED) << id;
  }
}

TEST_F(HealthTest, WholeJobPausesLongerThanStuckAfter_NobodyStuckWhenItResumes_BlockedTaskIs) {
  // muster serve --stuck-after 2s with heartbeats every 2 s. The workers step every 50 ms,
  // all pause 3.5 s at step 20 (1 s to 4.5 s), then step on; worker 2 hangs at step 80 (7.5 s).
  // Worker i beats at i * 700 ms into each 2 s, so their new steps reach the leader staggered.
  proto::CoordinationServiceConfig config = StuckConfig(3, 2'000, 0);
  config.set_heartbeat_timeout_in_ms(4'000);
  Spawn(config);
  RegisterWorkers(3);
  auto step_at = [](int id, int64_t ms) -> int64_t {
    int64_t step = ms < 1'000 ? ms / 50 : ms < 4'500 ? 20 : 20 + (ms - 4'500) / 50;
    return id == 2 ? std::min<int64_t>(step, 80) : step;
  };
  for (int64_t ms = 0; ms < 13'950; ms += 50) {
    for (int id = 0; id < 3; ++id) {
      if (ms >= 700 * id && (ms - 700 * id) % 2'000 == 0) {
        ASSERT_THAT(Beat(id, step_at(id, ms)), IsOk()) << "worker " << id << " at " << ms;
      }
    }
    AdvanceTime(50ms);
  }
  // 13.95 s: worker 2 reported 80 at 9.4 s; worker 0's beat at 10 s (step 110) moved past it.
  for (int id = 0; id < 3; ++id) {
    EXPECT_EQ(State("worker", id).state(), proto::TASKSTATE_CONNECTED) << id;
    EXPECT_TRUE(reports_[id]->empty()) << id;
  }
  AdvanceTime(50ms);  // 14 s: found by the check at 10 s + 2 s + 2 s (grace)
  proto::CoordinatedTaskStateInfo state = State("worker", 2);
  ASSERT_EQ(state.state(), proto::TASKSTATE_ERROR);
  auto stuck = GetTaskStuck(StatusFromFields(state));
  ASSERT_TRUE(stuck.has_value());
  EXPECT_EQ(stuck->reason(), proto::TaskStuck::STALLED);
  EXPECT_EQ(stuck->step(), 80);
  EXPECT_EQ(stuck->stalled_for_ms(), 4'600);  // since 9.4 s
  ASSERT_EQ(reports_[0]->size(), 1u);
  EXPECT_EQ((*reports_[0])[0].error_payload().stuck().step(), 80);
}

TEST_F(HealthTest, LaggingTask_StuckWithLaggingReason) {
  Spawn(StuckConfig(3, 0, 10));
  RegisterWorkers(3);
  ASSERT_THAT(Beat(0, 100), IsOk());
  ASSERT_THAT(Beat(1, 100), IsOk());
  ASSERT_THAT(Beat(2, 90), IsOk());  // exactly the allowed lag
  AdvanceTime(300ms);
  EXPECT_EQ(State("worker", 2).state(), proto::TASKSTATE_CONNECTED);
  ASSERT_THAT(Beat(0, 101), IsOk());
  ASSERT_THAT(Beat(1, 101), IsOk());
  AdvanceTime(300ms);
  proto::CoordinatedTaskStateInfo state = State("worker", 2);
  ASSERT_EQ(state.state(), proto::TASKSTATE_ERROR);
  auto stuck = GetTaskStuck(StatusFromFields(state));
  ASSERT_TRUE(stuck.has_value());
  EXPECT_EQ(stuck->reason(), proto::TaskStuck::LAGGING);
  EXPECT_EQ(stuck->median_step(), 101);
}

TEST_F(HealthTest, GetTaskState_ShowsStepAndRegistrationAge) {
  Spawn(Config(2));
  RegisterWorkers(1);
  AdvanceTime(1500ms);
  proto::CoordinatedTaskStateInfo fresh = State("worker", 0);
  EXPECT_EQ(fresh.last_heartbeat_age_ms(), -1);
  EXPECT_EQ(fresh.connected_age_ms(), 1500);
  EXPECT_FALSE(fresh.has_step());
  ASSERT_THAT(Beat(0, 42), IsOk());
  AdvanceTime(700ms);
  proto::CoordinatedTaskStateInfo stepping = State("worker", 0);
  EXPECT_EQ(stepping.step(), 42);
  EXPECT_EQ(stepping.step_age_ms(), 700);
  EXPECT_EQ(State("worker", 1).connected_age_ms(), -1);
}

TEST_F(HealthTest, Preemption_SyncStepIsHighestAnsweredPlusOneOnEveryTask) {
  Spawn(Config(3));
  std::vector<std::shared_ptr<Events>> events;
  for (int id = 0; id < 3; ++id) {
    events.push_back(std::make_shared<Events>());
    ASSERT_THAT(Register("worker", id, 10 + id, AgentWithEvents(events[id])), IsOk());
  }
  events[0]->step = 5;
  events[1]->step = 9;  // events[2] reports no step
  proto::NotifyPreemptionRequest notify;
  *notify.mutable_source_task() = MakeTask("worker", 1);
  notify.set_reason("maintenance");
  notify.set_deadline_unix_ms(1'000'000);
  auto first = Call<proto::NotifyPreemptionResponse>(leader_, notify);
  ASSERT_THAT(first, IsOk());
  EXPECT_TRUE(first->first());
  for (int id = 0; id < 3; ++id) {
    ASSERT_EQ(events[id]->notices.size(), 1u) << id;
    EXPECT_EQ(events[id]->notices[0].reason(), "maintenance");
    EXPECT_EQ(events[id]->notices[0].deadline_unix_ms(), 1'000'000);
    EXPECT_EQ(TaskName(events[id]->notices[0].notified_by()), "/job:worker/task:1");
    EXPECT_THAT(events[id]->sync_points, ElementsAre(10)) << id;
  }
  *notify.mutable_source_task() = MakeTask("worker", 0);
  auto second = Call<proto::NotifyPreemptionResponse>(leader_, notify);
  ASSERT_THAT(second, IsOk());
  EXPECT_FALSE(second->first());
  EXPECT_EQ(events[0]->notices.size(), 1u);  // one protocol per job
}

TEST_F(HealthTest, Preemption_TaskThatDiesBeforeAnswering_IsNotWaitedFor) {
  Spawn(Config(2));
  auto events = std::make_shared<Events>();
  events->step = 3;
  ASSERT_THAT(Register("worker", 0, 10, AgentWithEvents(events)), IsOk());
  // Worker 1's agent takes the notice and never answers (a hung process).
  auto silent = Keep(system_.spawn([]() -> AgentActor::behavior_type {
    return {[](const proto::ReportErrorToTaskRequest&) {},
            [](const proto::PreemptionNotice&) -> caf::result<proto::PreemptionAck> {
              return caf::delegated<proto::PreemptionAck>();
            },
            [](const proto::SyncPointNotice&) {}, [](const proto::MembershipNotice&) {}};
  }));
  ASSERT_THAT(Register("worker", 1, 11, silent), IsOk());
  proto::NotifyPreemptionRequest notify;
  *notify.mutable_source_task() = MakeTask("worker", 0);
  ASSERT_THAT(Call<proto::NotifyPreemptionResponse>(leader_, notify), IsOk());
  EXPECT_TRUE(events->sync_points.empty());  // still waiting for worker 1
  // Worker 0 keeps beating; worker 1 misses its heartbeat deadline and fails.
  for (int i = 0; i < 12; ++i) {
    AdvanceTime(1s);
    ASSERT_THAT(Beat(0, 3), IsOk());
  }
  EXPECT_EQ(State("worker", 1).state(), proto::TASKSTATE_ERROR);
  EXPECT_THAT(events->sync_points, ElementsAre(4));
}

TEST_F(HealthTest, NotifyPreemption_BadRequests) {
  Spawn(Config(2));
  RegisterWorkers(1);
  proto::NotifyPreemptionRequest notify;
  *notify.mutable_source_task() = MakeTask("worker", 1);  // not connected
  EXPECT_THAT(Call<proto::NotifyPreemptionResponse>(leader_, notify),
              StatusIs(Code::kFailedPrecondition, HasSubstr("/job:worker/task:1")));
  *notify.mutable_source_task() = MakeTask("worker", 9);
  EXPECT_THAT(Call<proto::NotifyPreemptionResponse>(leader_, notify),
              StatusIs(Code::kInvalidArgument));
  *notify.mutable_source_task() = MakeTask("worker", 0);
  notify.set_reason(std::string(5000, 'x'));
  EXPECT_THAT(Call<proto::NotifyPreemptionResponse>(leader_, notify),
              StatusIs(Code::kInvalidArgument, HasSubstr("4096")));
}

TEST_F(HealthTest, GetBarrierProgress_NamesTheMissingTasksAndHowLongItWaited) {
  Spawn(Config(2));
  RegisterWorkers(2);
  proto::BarrierRequest barrier;
  barrier.set_barrier_id("epoch");
  barrier.set_barrier_timeout_in_ms(60'000);
  *barrier.mutable_source_task() = MakeTask("worker", 0);
  *barrier.add_tasks() = MakeTask("worker", 0);
  *barrier.add_tasks() = MakeTask("worker", 1);
  auto waiting = Send<proto::BarrierResponse>(leader_, barrier);
  AdvanceTime(3s);
  proto::GetBarrierProgressRequest request;
  request.set_barrier_id("epoch");
  auto progress = Call<proto::GetBarrierProgressResponse>(leader_, request);
  ASSERT_THAT(progress, IsOk());
  EXPECT_EQ(progress->barrier().arrived(), 1);
  EXPECT_EQ(progress->barrier().total(), 2);
  EXPECT_EQ(progress->barrier().waited_ms(), 3'000);
  ASSERT_EQ(progress->barrier().waiting_for_size(), 1);
  EXPECT_EQ(TaskName(progress->barrier().waiting_for(0)), "/job:worker/task:1");
  request.set_barrier_id("other");
  EXPECT_THAT(Call<proto::GetBarrierProgressResponse>(leader_, request),
              StatusIs(Code::kNotFound, HasSubstr("other")));
  request.clear_barrier_id();
  EXPECT_THAT(Call<proto::GetBarrierProgressResponse>(leader_, request),
              StatusIs(Code::kInvalidArgument));
}

TEST_F(HealthTest, EphemeralKey_DeletedWhenItsTaskMissesItsHeartbeat) {
  Spawn(Config(2));
  RegisterWorkers(2);
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, Ephemeral("nccl/id/0", 0)), IsOk());
  ASSERT_THAT(TryGet("nccl/id/0"), IsOk());
  for (int i = 0; i < 12; ++i) {  // worker 1 beats, worker 0 does not
    AdvanceTime(1s);
    ASSERT_THAT(Heartbeat("worker", 1, 11), IsOk());
  }
  ASSERT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
  EXPECT_THAT(TryGet("nccl/id/0"), StatusIs(Code::kNotFound));
}

TEST_F(HealthTest, EphemeralKey_DeletedOnShutdownButPersistentKeysStay) {
  Spawn(Config(2));
  RegisterWorkers(1);
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, Ephemeral("addr/0", 0)), IsOk());
  proto::InsertKeyValueRequest persistent = Ephemeral("addr/kept", 0);
  persistent.set_ephemeral(false);
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, persistent), IsOk());
  ASSERT_THAT((TaskCall<proto::ShutdownTaskResponse, proto::ShutdownTaskRequest>("worker", 0)),
              IsOk());
  EXPECT_THAT(TryGet("addr/0"), StatusIs(Code::kNotFound));
  EXPECT_THAT(TryGet("addr/kept"), IsOk());
}

TEST_F(HealthTest, EphemeralKey_DeletedWhenANewIncarnationRegisters) {
  proto::CoordinationServiceConfig config = Config(1);
  config.add_recoverable_jobs("worker");
  Spawn(config);
  Reports reports;
  ASSERT_THAT(Register("worker", 0, 10, Agent(&reports)), IsOk());
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, Ephemeral("rank/0", 0)), IsOk());
  // A restarted process registers with a new incarnation: the old one ends first.
  auto again = Register("worker", 0, 20, Agent(&reports));
  if (!again.ok()) {  // the old incarnation fails; the recoverable task registers again
    ASSERT_THAT((TaskCall<proto::ResetTaskResponse, proto::ResetTaskRequest>("worker", 0)), IsOk());
    ASSERT_THAT(Register("worker", 0, 20, Agent(&reports)), IsOk());
  }
  EXPECT_THAT(TryGet("rank/0"), StatusIs(Code::kNotFound));
}

TEST_F(HealthTest, EphemeralWrite_NeedsAConnectedTaskActingAsItself) {
  Spawn(Config(2));
  RegisterWorkers(1);
  proto::InsertKeyValueRequest anonymous = Ephemeral("k/a", 0);
  anonymous.clear_source_task();
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(leader_, anonymous),
              StatusIs(Code::kInvalidArgument, HasSubstr("source_task")));
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(leader_, Ephemeral("k/b", 1)),
              StatusIs(Code::kFailedPrecondition, HasSubstr("/job:worker/task:1")));
  // A client-chosen owner incarnation is ignored: the key ends with worker 0's incarnation.
  proto::InsertKeyValueRequest forged = Ephemeral("k/c", 0);
  forged.set_owner_incarnation(999);
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, forged), IsOk());
  ASSERT_THAT((TaskCall<proto::ShutdownTaskResponse, proto::ShutdownTaskRequest>("worker", 0)),
              IsOk());
  EXPECT_THAT(TryGet("k/c"), StatusIs(Code::kNotFound));
}

}  // namespace
}  // namespace muster::testing
