// Unexpected messages at each kind of the leader's actors (coordinator, token gate, task,
// barrier, key-value directory and fan-out, heartbeat monitor): dropped and counted, a request
// among them answered with an error and anything else not at all, at most one escaped line a
// second for the process, and the actor still answers its real requests. Deterministic,
// simulated time.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <absl/strings/strip.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>

#include "muster/actors/caf/hardening.h"
#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/actors/kv/directory/kv_directory_actor.h"
#include "muster/actors/kv/routing/kv_fanout_actor.h"
#include "muster/actors/tasks/heartbeat_monitor_actor.h"
#include "muster/actors/tasks/task_actor.h"
#include "muster/net/leader/auth/token_gate_actor.h"
#include "tests/actors/kv/kv_test_helpers.h"
#include "tests/testing/barrier_stand_in.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using namespace std::chrono_literals;
using ::muster::testing::BarrierTest;
using ::muster::testing::InsertRequest;
using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::muster::testing::TryGetRequest;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// Text with an ANSI escape (red, then clear the screen) and other control bytes.
const std::string kHostile = "\x1b[31m\x1b[2J\r\a";

class UnexpectedMessagesTest : public BarrierTest {
 protected:
  UnexpectedMessagesTest() { ResetUnexpectedMessageLogForTesting(); }

  // Sends `xs` one-way to `dest` from an actor that counts whatever comes back to it.
  template <class... Ts>
  std::shared_ptr<int> SendOneWay(const caf::actor& dest, Ts... xs) {
    auto answers = std::make_shared<int>(0);
    Keep(system_.spawn([=](caf::event_based_actor* self) -> caf::behavior {
      self->set_default_handler(
          [answers](caf::scheduled_actor*, caf::message_view&) -> caf::result<caf::message> {
            ++*answers;
            return caf::message();
          });
      self->set_error_handler([answers](caf::scheduled_actor*, caf::error&) { ++*answers; });
      self->send(dest, xs...);
      return {[](int) {}};
    }));
    Drain();
    return answers;
  }

  // The error that answers the request `text` to `dest` (none while no answer came).
  caf::error RequestError(const caf::actor& dest, const std::string& text) {
    auto error = std::make_shared<caf::error>();
    Keep(system_.spawn([=](caf::event_based_actor* self) {
      self->request(dest, caf::infinite, text)
          .then([](const std::string&) {}, [error](caf::error& e) { *error = std::move(e); });
    }));
    Drain();
    return *error;
  }

  // Sends `dest` a request of a type it does not handle, then the same one-way, and the text
  // of a node-info reply (CAF's shape) one-way; each is dropped and counted, the request
  // answered with CAF's unexpected_message. Returns what was logged.
  template <class Handle>
  std::string SendUnexpected(const Handle& handle) {
    caf::actor dest = caf::actor_cast<caf::actor>(handle);
    const uint64_t before = UnexpectedMessagesDropped();
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(RequestError(dest, kHostile), caf::sec::unexpected_message);
    EXPECT_EQ(*SendOneWay(dest, kHostile), 0);
    EXPECT_EQ(*SendOneWay(dest, caf::ok_atom::value, std::string("info"), caf::strong_actor_ptr(),
                          kHostile),
              0);
    std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(UnexpectedMessagesDropped() - before, 3u);
    EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
    return log;
  }

  CoordinatorActor Coordinator() {
    proto::CoordinationServiceConfig config = Cluster(1);
    config.set_heartbeat_timeout_in_ms(10'000);
    CoordinatorOptions options{.config = std::move(config), .incarnation = 77};
    CoordinatorActor coordinator = Keep(SpawnCoordinator(system_, std::move(options)));
    Drain();
    return coordinator;
  }
};

// One line for the three messages (same simulated instant): the first one, escaped.
constexpr char kFirstLine[] =
    "muster: dropped 1 unexpected message since the last such line; the latest, to ";
constexpr char kEscapedText[] = "(\\\"\\x1b[31m\\x1b[2J\\r\\x07\\\")";

TEST_F(UnexpectedMessagesTest, Coordinator_DroppedCountedStillAnswers) {
  CoordinatorActor coordinator = Coordinator();
  std::string log = SendUnexpected(coordinator);
  EXPECT_EQ(log,
            absl::StrCat(kFirstLine, "muster.coordinator from this node: ", kEscapedText, "\n"));
  auto state = Call<proto::GetTaskStateResponse>(coordinator, [] {
    proto::GetTaskStateRequest request;
    *request.add_source_task() = Worker(0);
    return request;
  }());
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->task_state(0).state(), proto::TASKSTATE_DISCONNECTED);
}

// The gate passes what it does not know to the coordinator, which drops it.
TEST_F(UnexpectedMessagesTest, TokenGate_DroppedAtTheCoordinatorGateStillAnswers) {
  CoordinatorActor gate = Keep(SpawnTokenGate(system_, Coordinator(), {.token = "secret"}));
  Drain();
  std::string log = SendUnexpected(gate);
  EXPECT_THAT(log, HasSubstr("to muster.coordinator from this node"));
  proto::AuthenticateRequest authenticate;
  authenticate.set_token("secret");
  EXPECT_THAT(Call<proto::AuthenticateResponse>(gate, authenticate), IsOk());
}

TEST_F(UnexpectedMessagesTest, TaskActor_DroppedCountedStillAnswers) {
  auto parent = Keep(system_.spawn([]() -> TaskParentActor::behavior_type {
    return {[](task_state_atom, const proto::CoordinatedTaskStateInfo&, const AgentActor&) {},
            [](const proto::BarrierRequest&) { return proto::BarrierResponse(); }};
  }));
  TaskSpec spec{.task = Worker(0), .leader_incarnation = 77, .heartbeat_timeout = 10s};
  spec.parent = parent;
  TaskActor task = Keep(SpawnTaskActor(system_, std::move(spec)));
  Drain();
  EXPECT_THAT(SendUnexpected(task), HasSubstr("to muster.task from this node"));
  proto::HeartbeatRequest beat;
  *beat.mutable_source_task() = Worker(0);
  beat.set_incarnation(5);
  EXPECT_THAT(Call<proto::HeartbeatResponse>(task, beat),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be registered")));
}

TEST_F(UnexpectedMessagesTest, BarrierActor_DroppedCountedStillAnswers) {
  auto stand_in = StandIn(Cluster(2));
  auto waiting = Arrive(stand_in, Barrier("b", Worker(0)));
  ASSERT_EQ(probe_->spawned.size(), 1u);
  BarrierActor barrier = probe_->spawned[0];
  EXPECT_THAT(SendUnexpected(barrier), HasSubstr("to muster.barrier from this node"));
  auto open = Call<proto::GetBarriersResponse>(barrier, proto::GetBarriersRequest());
  ASSERT_THAT(open, IsOk());
  EXPECT_EQ(open->barriers_size(), 1);
  EXPECT_FALSE(waiting->has_value());
}

TEST_F(UnexpectedMessagesTest, KvDirectoryAndFanOut_DroppedCountedStillAnswer) {
  KvDirectoryActor directory = Keep(SpawnKvDirectory(system_, "d", KvLimits()));
  KvFanOutActor fan_out = Keep(SpawnKvFanOut(system_, {directory}));
  Drain();
  EXPECT_THAT(SendUnexpected(directory), HasSubstr("to muster.kv_directory from this node"));
  ResetUnexpectedMessageLogForTesting();
  EXPECT_THAT(SendUnexpected(fan_out), HasSubstr("to muster.kv_fanout from this node"));
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(directory, InsertRequest("d/a", "1")), IsOk());
  auto value = Call<proto::TryGetKeyValueResponse>(directory, TryGetRequest("d/a"));
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(value->kv().value(), "1");
  proto::GetKeyValueDirRequest all;
  auto listing = Call<proto::GetKeyValueDirResponse>(fan_out, all);
  ASSERT_THAT(listing, IsOk());
  EXPECT_EQ(listing->kv_size(), 1);
}

TEST_F(UnexpectedMessagesTest, HeartbeatMonitor_DroppedCountedStillAnswers) {
  auto monitor = std::make_shared<HeartbeatMonitorActor>();
  Keep(system_.spawn([monitor](caf::event_based_actor* self) -> caf::behavior {
    *monitor = SpawnHeartbeatMonitor(self, 77, 10s);
    return {[](int) {}};
  }));
  Drain();
  EXPECT_THAT(SendUnexpected(*monitor), HasSubstr("to muster.heartbeat_monitor from this node"));
  auto beats = Call<proto::HeartbeatBatchResponse>(
      *monitor, proto::HeartbeatBatchRequest(), std::vector<uint32_t>{}, std::vector<TaskActor>{});
  ASSERT_THAT(beats, IsOk());
  EXPECT_EQ(beats->leader_incarnation(), 77u);
}

// One line a second for the whole process, with the count since the last line.
TEST_F(UnexpectedMessagesTest, Flood_OneLineASecondWithTheCount) {
  KvDirectoryActor directory = Keep(SpawnKvDirectory(system_, "d", KvLimits()));
  Drain();
  caf::actor dest = caf::actor_cast<caf::actor>(directory);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 1000; ++i) SendOneWay(dest, kHostile + std::to_string(i));
  AdvanceTime(999ms);
  SendOneWay(dest, std::string("still within the second"));
  AdvanceTime(1ms);
  SendOneWay(dest, std::string(10'000, 'x'));  // cut short
  std::string log = ::testing::internal::GetCapturedStderr();
  std::vector<std::string> lines = absl::StrSplit(absl::StripSuffix(log, "\n"), '\n');
  ASSERT_EQ(lines.size(), 2u) << log;
  EXPECT_THAT(lines[0], HasSubstr("dropped 1 unexpected message since"));
  EXPECT_THAT(lines[1], AllOf(HasSubstr("dropped 1001 unexpected messages since the last such "
                                        "line; the latest, to muster.kv_directory"),
                              HasSubstr("(\\\"xxxx"), HasSubstr("xxx...")));
  EXPECT_LT(lines[1].size(), 400u);
  EXPECT_THAT(log, Not(HasSubstr("\x1b")));
}

}  // namespace
}  // namespace muster
