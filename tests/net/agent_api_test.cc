// The Agent as an embedding program uses it, over real TCP on 127.0.0.1 (a Leader in one actor
// system, agents in another): incarnation(), error(), GetClusterDeviceInfo(), per-call cancel
// of GetKeyValueAsync, destruction with and without shutdown, waiting for a lost leader
// (leader_reconnect_timeout), and actor systems destroyed while threads that used an Agent are
// still alive.
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <absl/synchronization/notification.h>
#include <absl/time/time.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/agent.h"
#include "muster/net/leader/leader.h"
#include "muster/net/transport/node_config.h"
#include "tests/net/two_nodes_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

using ::muster::testing::Jobs;

class AgentApiTest : public testing::TwoNodesTest {
 protected:
  void StartLeader(CoordinatorOptions options) {
    auto leader = Leader::Start(leader_system_, std::move(options));
    ASSERT_TRUE(leader.ok()) << leader.status();
    leader_ = *std::move(leader);
  }

  std::unique_ptr<Agent> NewAgent(int task, AgentOptions options = {}) {
    options.leader = leader_->address();
    options.task_id = task;
    options.register_timeout = absl::Seconds(10);
    auto agent = Agent::Create(worker_system_, options,
                               [this](const absl::Status& error) { errors_.push_back(error); });
    EXPECT_TRUE(agent.ok()) << agent.status();
    return agent.ok() ? *std::move(agent) : nullptr;
  }

  // The task's state as the leader reports it.
  proto::CoordinatedTaskStateInfo LeaderState(int task) {
    caf::scoped_actor self{leader_system_};
    proto::GetTaskStateRequest request;
    *request.add_source_task() = MakeTask("worker", task);
    proto::CoordinatedTaskStateInfo info;
    self->request(leader_->coordinator(), std::chrono::seconds(5), request)
        .receive([&](proto::GetTaskStateResponse& r) { info = r.task_state(0); },
                 [&](caf::error& error) { ADD_FAILURE() << ToStatus(error); });
    return info;
  }

  // Polls the leader until `task` is in `state` (bounded).
  proto::CoordinatedTaskStateInfo AwaitLeaderState(int task, proto::CoordinatedTaskState state) {
    proto::CoordinatedTaskStateInfo info;
    for (int i = 0; i < 500; ++i) {
      info = LeaderState(task);
      if (info.state() == state) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return info;
  }

  std::vector<absl::Status> errors_;
};

TEST(WorkerNodeOptionsTest, TimesTheLeaderOutAfterTheHeartbeatTimeoutKeepAlivesEveryQuarter) {
  NodeOptions normal = WorkerNodeOptions(absl::Seconds(10));
  EXPECT_EQ(normal.connection_timeout, std::chrono::seconds(10));
  EXPECT_EQ(normal.connection_heartbeat_interval, std::chrono::milliseconds(2500));
  // Never below 2 s, so the leader's keep-alives (every 500 ms) always arrive several times.
  NodeOptions short_timeout = WorkerNodeOptions(absl::Milliseconds(300));
  EXPECT_EQ(short_timeout.connection_timeout, std::chrono::seconds(2));
  EXPECT_EQ(short_timeout.connection_heartbeat_interval, std::chrono::milliseconds(500));
  // The leader keeps its own: keep-alives every 500 ms, no connection timeout.
  NodeOptions leader;
  EXPECT_EQ(leader.connection_heartbeat_interval, std::chrono::milliseconds(500));
  EXPECT_EQ(leader.connection_timeout, caf::timespan{0});
}

TEST(WorkerNodeOptionsTest, OneWayHeartbeatsOnlyWhenCafDetectsASilentLeaderInTime) {
  using namespace std::chrono_literals;
  EXPECT_TRUE(MayBeatOneWay(NodeConfig(WorkerNodeOptions(absl::Seconds(10))), 10s));
  EXPECT_TRUE(MayBeatOneWay(NodeConfig(WorkerNodeOptions(absl::Seconds(2))), 2s));
  // The connection timeout is 2 s at least: longer than a heartbeat timeout of 1 s.
  EXPECT_FALSE(MayBeatOneWay(NodeConfig(WorkerNodeOptions(absl::Seconds(1))), 1s));
  EXPECT_FALSE(MayBeatOneWay(NodeConfig(WorkerNodeOptions(absl::Seconds(10))), 5s));
  // The leader's options: no connection timeout.
  EXPECT_FALSE(MayBeatOneWay(NodeConfig(NodeOptions{}), 10s));
  // CAF ignores the connection timeout without keep-alive ticks.
  NodeOptions no_ticks = WorkerNodeOptions(absl::Seconds(10));
  no_ticks.connection_heartbeat_interval = caf::timespan{0};
  EXPECT_FALSE(MayBeatOneWay(NodeConfig(no_ticks), 10s));
  // Ticks so rare that a silent leader would be seen only after 1.25 heartbeat timeouts.
  NodeOptions rare_ticks = WorkerNodeOptions(absl::Seconds(10));
  rare_ticks.connection_heartbeat_interval = std::chrono::seconds(5);
  EXPECT_FALSE(MayBeatOneWay(NodeConfig(rare_ticks), 10s));
}

TEST_F(AgentApiTest, Incarnation_GivenOrDrawnAndSentToTheLeader) {
  StartLeader(Jobs(2));
  auto given = NewAgent(0, {.incarnation = 42});
  EXPECT_EQ(given->incarnation(), 42u);
  auto drawn = NewAgent(1);
  EXPECT_NE(drawn->incarnation(), 0u);
  ASSERT_THAT(drawn->Connect(), IsOk());
  auto alive = drawn->GetAliveTasks({MakeTask("worker", 1)});
  ASSERT_THAT(alive.status(), IsOk());
  ASSERT_EQ(alive->incarnations_size(), 1);
  EXPECT_EQ(alive->incarnations(0), drawn->incarnation());
}

TEST_F(AgentApiTest, Error_OkUntilReportedThenTheErrorThatStoppedTheAgent) {
  StartLeader(Jobs(1));
  auto agent = NewAgent(0);
  ASSERT_THAT(agent->Connect(), IsOk());
  EXPECT_THAT(agent->error(), IsOk());
  ASSERT_THAT(agent->ReportError(absl::DataLossError("checkpoint corrupt")), IsOk());
  EXPECT_EQ(agent->state(), AgentState::kError);
  EXPECT_THAT(agent->error(), StatusIs(Code::kDataLoss, HasSubstr("checkpoint corrupt")));
  ASSERT_THAT(agent->Reset(), IsOk());
  EXPECT_EQ(agent->state(), AgentState::kDisconnected);
  EXPECT_THAT(agent->error(), IsOk());
}

// An etcd:// leader is read from etcd when the agent is created: a malformed one is
// InvalidArgument, an etcd that does not answer Unavailable naming the URL (within
// register_timeout; the leaders themselves: tests/e2e/ha_failover_e2e_test.cc).
TEST_F(AgentApiTest, EtcdLeaderUrl_MalformedOrEtcdNotAnswering_Refused) {
  EXPECT_THAT(Agent::Create(worker_system_, {.leader = "etcd://127.0.0.1:1"}, nullptr).status(),
              StatusIs(Code::kInvalidArgument, HasSubstr("etcd://HOST:PORT[,HOST:PORT...]/NAME")));
  EXPECT_THAT(Agent::Create(worker_system_,
                            {.leader = "etcd://127.0.0.1:1/train-7",
                             .register_timeout = absl::Milliseconds(300)},
                            nullptr)
                  .status(),
              StatusIs(Code::kUnavailable,
                       HasSubstr("cannot read the leaders of etcd://127.0.0.1:1/train-7")));
}

TEST_F(AgentApiTest, LeaderReconnectTimeout_LostLeaderAwaitedAndShutdownEndsLocally) {
  StartLeader(Jobs(1));
  EXPECT_THAT(
      Agent::Create(worker_system_,
                    {.leader = leader_->address(), .leader_reconnect_timeout = absl::Seconds(-1)},
                    nullptr)
          .status(),
      StatusIs(Code::kInvalidArgument, HasSubstr("leader_reconnect_timeout")));
  auto agent = NewAgent(0, {.leader_reconnect_timeout = absl::Seconds(30)});
  ASSERT_THAT(agent->Connect(), IsOk());
  EXPECT_FALSE(agent->Status().reconnecting);
  leader_->Stop();  // no leader comes back
  bool reconnecting = false;
  for (int i = 0; i < 500 && !reconnecting; ++i) {
    reconnecting = agent->Status().reconnecting;
    if (!reconnecting) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(reconnecting);
  EXPECT_EQ(agent->state(), AgentState::kRunning);
  EXPECT_THAT(agent->Shutdown(), IsOk());  // ends locally: no leader to tell
  AgentStatus status = agent->Status();
  EXPECT_EQ(status.state, AgentState::kDisconnected);
  EXPECT_FALSE(status.reconnecting);
  EXPECT_TRUE(errors_.empty());
}

TEST_F(AgentApiTest, GetClusterDeviceInfo_ACopyOfTheLastExchange) {
  StartLeader(Jobs(1));
  auto agent = NewAgent(0);
  ASSERT_THAT(agent->Connect(), IsOk());
  EXPECT_FALSE(agent->GetClusterDeviceInfo().has_tf());
  proto::CoordinationServiceDeviceInfo local;
  local.mutable_tf()->add_devices()->set_name("/job:worker/replica:0/task:0/device:CPU:0");
  ASSERT_THAT(agent->WaitForAllTasks(local).status(), IsOk());
  // Read from another thread while this one keeps the agent busy: a copy, no shared member.
  auto reader = std::async(std::launch::async, [&] { return agent->GetClusterDeviceInfo(); });
  ASSERT_THAT(agent->InsertKeyValue("k", "v"), IsOk());
  proto::CoordinationServiceDeviceInfo copy = reader.get();
  ASSERT_EQ(copy.tf().devices_size(), 1);
  EXPECT_EQ(copy.tf().devices(0).name(), "/job:worker/replica:0/task:0/device:CPU:0");
}

TEST_F(AgentApiTest, GetKeyValueAsyncCancel_OnlyThatCallCancelledOthersComplete) {
  StartLeader(Jobs(1));
  auto agent = NewAgent(0);
  ASSERT_THAT(agent->Connect(), IsOk());
  std::promise<absl::StatusOr<std::string>> first;
  std::promise<absl::StatusOr<std::string>> second;
  GetKeyValueHandle cancelled = agent->GetKeyValueAsync(
      "nccl/id", [&](const absl::StatusOr<std::string>& v) { first.set_value(v); });
  agent->GetKeyValueAsync("nccl/id",
                          [&](const absl::StatusOr<std::string>& v) { second.set_value(v); });
  cancelled.Cancel();
  auto first_result = first.get_future();
  ASSERT_EQ(first_result.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_THAT(first_result.get().status(),
              StatusIs(Code::kCancelled, HasSubstr("GetKeyValue(nccl/id) was cancelled")));
  ASSERT_THAT(agent->InsertKeyValue("nccl/id", "abc"), IsOk());
  auto second_result = second.get_future();
  ASSERT_EQ(second_result.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto value = second_result.get();
  ASSERT_THAT(value.status(), IsOk());
  EXPECT_EQ(*value, "abc");
  cancelled.Cancel();  // after completion: harmless
  EXPECT_EQ(agent->state(), AgentState::kRunning);
}

// The callback of GetKeyValueAsync runs outside the agent actor's turn: it may call the agent's
// blocking methods (inside the turn, the call would wait for the actor running it).
TEST_F(AgentApiTest, GetKeyValueAsyncCallback_MayCallTheAgentsBlockingMethods) {
  StartLeader(Jobs(1));
  auto agent = NewAgent(0);
  ASSERT_THAT(agent->Connect(), IsOk());
  std::promise<absl::StatusOr<std::string>> read_back;
  agent->GetKeyValueAsync("cfg/b", [&](const absl::StatusOr<std::string>& v) {
    ASSERT_THAT(v.status(), IsOk());
    read_back.set_value(agent->TryGetKeyValue("cfg/b"));
  });
  ASSERT_THAT(agent->InsertKeyValue("cfg/b", "2"), IsOk());
  auto result = read_back.get_future();
  ASSERT_EQ(result.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto value = result.get();
  ASSERT_THAT(value.status(), IsOk());
  EXPECT_EQ(*value, "2");
}

// CallAsync completes from the agent actor's turn (no actor of its own per call); the user's
// WaitAtBarrierAsync callback still runs outside that turn, so it may call the agent.
TEST_F(AgentApiTest, AsyncCalls_CompleteAndABarrierCallbackMayCallTheAgent) {
  StartLeader(Jobs(1));
  auto agent = NewAgent(0);
  ASSERT_THAT(agent->Connect(), IsOk());
  ASSERT_THAT(agent->InsertKeyValue("cfg/a", "1"), IsOk());
  std::promise<absl::StatusOr<proto::TryGetKeyValueResponse>> got;
  proto::TryGetKeyValueRequest request;
  request.set_key("cfg/a");
  agent->CallAsync<proto::TryGetKeyValueResponse>(
      [&](absl::StatusOr<proto::TryGetKeyValueResponse> r) { got.set_value(std::move(r)); },
      request);
  auto got_future = got.get_future();
  ASSERT_EQ(got_future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto response = got_future.get();
  ASSERT_THAT(response.status(), IsOk());
  EXPECT_EQ(response->kv().value(), "1");

  std::promise<std::pair<absl::Status, absl::StatusOr<std::string>>> barrier;
  Agent* raw = agent.get();
  agent->WaitAtBarrierAsync("b", absl::Seconds(10), {}, [&](const absl::Status& status) {
    barrier.set_value({status, raw->TryGetKeyValue("cfg/a")});
  });
  auto barrier_future = barrier.get_future();
  ASSERT_EQ(barrier_future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto [status, value] = barrier_future.get();
  EXPECT_THAT(status, IsOk());
  ASSERT_THAT(value.status(), IsOk());
  EXPECT_EQ(*value, "1");
  EXPECT_TRUE(errors_.empty());
}

TEST_F(AgentApiTest, ValueOverTheLeadersFrameLimit_RefusedLocallyConnectionKept) {
  StartLeader(Jobs(1));
  auto agent = NewAgent(0);
  ASSERT_THAT(agent->Connect(), IsOk());
  std::string huge(9 << 20, 'x');
  EXPECT_THAT(agent->InsertKeyValue("blob", huge),
              StatusIs(Code::kResourceExhausted,
                       HasSubstr("the leader accepts requests of at most 8384512 bytes")));
  EXPECT_EQ(agent->state(), AgentState::kRunning);
  EXPECT_THAT(agent->InsertKeyValue("small", "v"), IsOk());
  EXPECT_TRUE(errors_.empty());
}

TEST_F(AgentApiTest, DestroyedWithShutdown_LeaderSeesDisconnected) {
  StartLeader(Jobs(1));
  auto agent = NewAgent(0);
  ASSERT_THAT(agent->Connect(), IsOk());
  agent.reset();
  EXPECT_EQ(LeaderState(0).state(), proto::TASKSTATE_DISCONNECTED);
}

TEST_F(AgentApiTest, DestroyedWithoutShutdown_LeaderSeesALostTask) {
  StartLeader(Jobs(1));
  auto agent = NewAgent(0, {.shutdown_on_destruction = false});
  ASSERT_THAT(agent->Connect(), IsOk());
  agent.reset();
  auto info = AwaitLeaderState(0, proto::TASKSTATE_ERROR);
  EXPECT_EQ(info.state(), proto::TASKSTATE_ERROR);
  EXPECT_EQ(info.error_code(), static_cast<int>(Code::kUnavailable));
}

// A thread that used an Agent would keep CAF's thread-local reference to the system's logger,
// and ~actor_system waits for it; the entry points release it, so that a system can be
// destroyed while threads that used agents on it (a pool) still live. Each round runs on its
// own thread, which builds and destroys the systems (the thread that builds a system holds that
// reference too), watched by this one.
TEST(AgentThreadsTest, SystemsDestroyedWhileThreadsThatUsedAgentsLive) {
  constexpr int kRounds = 3;
  constexpr int kThreads = 3;
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<absl::Notification>> release;
  for (int round = 0; round < kRounds; ++round) {
    auto finished = std::async(std::launch::async, [&] {
      NodeConfig leader_config;
      caf::actor_system leader_system{leader_config};
      auto leader = Leader::Start(leader_system, Jobs(kThreads));
      ASSERT_TRUE(leader.ok()) << leader.status();
      NodeConfig worker_config{WorkerNodeOptions()};
      auto worker_system = std::make_unique<caf::actor_system>(worker_config);
      std::vector<std::unique_ptr<absl::Notification>> used;
      for (int t = 0; t < kThreads; ++t) {
        used.push_back(std::make_unique<absl::Notification>());
        release.push_back(std::make_unique<absl::Notification>());
        threads.emplace_back([&, t, done = used.back().get(), wait = release.back().get()] {
          auto agent = Agent::Create(*worker_system, {.leader = (*leader)->address(), .task_id = t},
                                     nullptr);
          if (agent.ok()) {
            EXPECT_THAT((*agent)->Connect(), IsOk());
            EXPECT_THAT((*agent)->TryGetKeyValue("missing").status(), StatusIs(Code::kNotFound));
            agent->reset();
          }
          done->Notify();
          wait->WaitForNotification();  // stays alive while the systems are destroyed
        });
      }
      for (auto& done : used) done->WaitForNotification();
      leader->reset();
      worker_system.reset();
    });
    if (finished.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      ADD_FAILURE() << "destroying the actor systems hangs (round " << round << ")";
      std::fflush(stdout);
      std::_Exit(1);  // the hung destructors cannot be joined
    }
  }
  for (auto& wait : release) wait->Notify();
  for (auto& thread : threads) thread.join();
}

TEST_F(AgentApiTest, KeyValueBeforeConnect_WorksOverTcpAndLeavesTheTaskUnregistered) {
  StartLeader(Jobs(2));
  auto writer = NewAgent(0);
  auto reader = NewAgent(1);
  ASSERT_THAT(writer->InsertKeyValue("bootstrap/addr", "10.0.0.1:1234"), IsOk());
  auto value = reader->GetKeyValue("bootstrap/addr", absl::Seconds(5));
  ASSERT_THAT(value.status(), IsOk());
  EXPECT_EQ(*value, "10.0.0.1:1234");
  EXPECT_THAT(reader->TryGetKeyValue("bootstrap/none"), StatusIs(Code::kNotFound));
  auto counter = writer->IncrementKeyValue("bootstrap/count", 3);
  ASSERT_THAT(counter.status(), IsOk());
  EXPECT_EQ(*counter, 3);
  EXPECT_EQ(writer->state(), AgentState::kDisconnected);
  EXPECT_EQ(LeaderState(0).state(), proto::TASKSTATE_DISCONNECTED);
  // Connect() afterwards registers over the same connection.
  ASSERT_THAT(writer->Connect(), IsOk());
  EXPECT_EQ(LeaderState(0).state(), proto::TASKSTATE_CONNECTED);
}

// The agent actor runs on the worker's network thread; the user's callbacks never do, and may
// call the agent (a blocking call from the agent actor's own thread would never be answered).
TEST_F(AgentApiTest, WatchCallback_RunsOffTheNetworkThread_AndMayCallTheAgent) {
  StartLeader(Jobs(1));
  auto agent = NewAgent(0);
  ASSERT_NE(agent, nullptr);
  ASSERT_THAT(agent->Connect(), IsOk());
  std::promise<std::pair<std::thread::id, absl::StatusOr<std::string>>> seen;
  std::atomic<bool> first{true};
  Agent* raw = agent.get();
  ASSERT_THAT(agent->StartWatchKeyEvents(
                  "cfg/a",
                  [&](const proto::KeyValueChangeEvent&) {
                    if (!first.exchange(false)) return;
                    seen.set_value({std::this_thread::get_id(), raw->TryGetKeyValue("cfg/a")});
                  }),
              IsOk());
  ASSERT_THAT(agent->InsertKeyValue("cfg/a", "1"), IsOk());
  auto future = seen.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto [thread, value] = future.get();
  EXPECT_NE(thread, worker_system_.middleman().backend().thread_id());
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "1");
  EXPECT_TRUE(errors_.empty());
}

}  // namespace
}  // namespace muster
