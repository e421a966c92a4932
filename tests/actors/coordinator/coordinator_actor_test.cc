// Coordinator registration, deterministic (simulated time, test scheduler).
#include "muster/actors/coordinator/coordinator_actor.h"

#include <memory>
#include <type_traits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/task_name.h"
#include "tests/testing/deterministic_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::StatusIs;
using ::testing::HasSubstr;

class CoordinatorTest : public testing::DeterministicTest {
 protected:
  CoordinatorActor Spawn() {
    CoordinatorOptions options;
    options.incarnation = 77;
    auto* job = options.config.add_coordinated_job_list();
    job->set_name("worker");
    job->set_num_tasks(2);
    return Keep(SpawnCoordinator(system_, options));
  }
  AgentActor Agent() {
    return Keep(system_.spawn([]() -> AgentActor::behavior_type {
      return {[](const proto::ReportErrorToTaskRequest&) {},
              [](const proto::PreemptionNotice&) { return proto::PreemptionAck(); },
              [](const proto::SyncPointNotice&) {}, [](const proto::MembershipNotice&) {}};
    }));
  }
  // The actor that answered a request (a reply or an error): the sender the reply names.
  template <class Response, class... Args>
  caf::actor_addr Answerer(const CoordinatorActor& dest, Args... args) {
    auto answerer = std::make_shared<caf::actor_addr>();
    Keep(system_.spawn([=](caf::event_based_actor* self) {
      auto record = [=] { *answerer = caf::actor_cast<caf::actor_addr>(self->current_sender()); };
      self->request(dest, caf::infinite, args...)
          .then([=](Response&) { record(); }, [=](caf::error&) { record(); });
    }));
    Drain();
    return *answerer;
  }
};

proto::RegisterTaskRequest Register(const std::string& job, int id, uint64_t incarnation) {
  proto::RegisterTaskRequest request;
  *request.mutable_source_task() = MakeTask(job, id);
  request.set_incarnation(incarnation);
  return request;
}

TEST_F(CoordinatorTest, RegisterTask_KnownTask_ReturnsLeaderIncarnation) {
  auto coordinator = Spawn();
  auto reply = Call<proto::RegisterTaskResponse>(coordinator, Register("worker", 1, 5), Agent());
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->leader_incarnation(), 77u);
}

TEST_F(CoordinatorTest, RegisterTask_TellsTheAgentTheLeadersHeartbeatTimeout) {
  CoordinatorOptions options;
  options.incarnation = 77;
  auto* job = options.config.add_coordinated_job_list();
  job->set_name("worker");
  job->set_num_tasks(1);
  options.config.set_heartbeat_timeout_in_ms(2'000);
  auto coordinator = Keep(SpawnCoordinator(system_, options));
  auto reply = Call<proto::RegisterTaskResponse>(coordinator, Register("worker", 0, 5), Agent());
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->heartbeat_timeout_ms(), 2'000);
  // A config without one: the leader's default, 10 s.
  auto defaulted = Call<proto::RegisterTaskResponse>(Spawn(), Register("worker", 1, 5), Agent());
  ASSERT_TRUE(defaulted.ok()) << defaulted.status();
  EXPECT_EQ(defaulted->heartbeat_timeout_ms(), 10'000);
}

TEST_F(CoordinatorTest, RegisterTask_UnknownTask_InvalidArgumentNamingIt) {
  auto coordinator = Spawn();
  EXPECT_THAT(Call<proto::RegisterTaskResponse>(coordinator, Register("worker", 2, 5), Agent()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/job:worker/task:2")));
  EXPECT_THAT(Call<proto::RegisterTaskResponse>(coordinator, Register("ps", 0, 5), Agent()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/job:ps/task:0")));
}

template <class Request>
Request About(const std::string& job, int id, uint64_t incarnation = 0) {
  Request request;
  *request.mutable_source_task() = MakeTask(job, id);
  if constexpr (std::is_same_v<Request, proto::HeartbeatRequest>) {
    request.set_incarnation(incarnation);
  }
  return request;
}

// A reply names its sender, and the node it goes to keeps a proxy of that actor (and the leader
// tracks it) for as long as it lives: the replies about a task come from the coordinator or the
// heartbeat monitor, never from the task actor (which answers the requests delegated to it in
// the coordinator's name), so the leader holds nothing per task for it.
TEST_F(CoordinatorTest, RepliesAboutATask_ComeFromTheCoordinatorOrTheHeartbeatMonitor) {
  auto coordinator = Spawn();
  auto self = caf::actor_cast<caf::actor_addr>(coordinator);
  EXPECT_EQ(Answerer<proto::RegisterTaskResponse>(coordinator, Register("worker", 0, 5), Agent()),
            self);
  // A beat of the connected incarnation is answered by the heartbeat monitor; one it cannot
  // judge (task 1 never registered) goes on to the task actor, which answers as the coordinator.
  auto monitor = Answerer<proto::HeartbeatResponse>(coordinator,
                                                    About<proto::HeartbeatRequest>("worker", 0, 5));
  EXPECT_NE(monitor, caf::actor_addr());
  EXPECT_NE(monitor, self);
  EXPECT_EQ(Answerer<proto::HeartbeatResponse>(coordinator,
                                               About<proto::HeartbeatRequest>("worker", 1, 9)),
            self);
  // A failure answered before the task actor dies (Aborted: another incarnation).
  EXPECT_EQ(Answerer<proto::RegisterTaskResponse>(coordinator, Register("worker", 0, 6), Agent()),
            self);
  EXPECT_EQ(Answerer<proto::RegisterTaskResponse>(coordinator, Register("worker", 1, 7), Agent()),
            self);
  proto::ReportErrorToServiceRequest report;
  *report.mutable_error_origin() = MakeTask("worker", 1);
  EXPECT_EQ(Answerer<proto::ReportErrorToServiceResponse>(coordinator, report), self);
  EXPECT_EQ(Answerer<proto::ShutdownTaskResponse>(coordinator,
                                                  About<proto::ShutdownTaskRequest>("worker", 0)),
            self);
  EXPECT_EQ(
      Answerer<proto::ResetTaskResponse>(coordinator, About<proto::ResetTaskRequest>("worker", 0)),
      self);
}

}  // namespace
}  // namespace muster
