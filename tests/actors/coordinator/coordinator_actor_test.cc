// Coordinator registration, deterministic (simulated time, test scheduler).
#include "muster/actors/coordinator/coordinator_actor.h"

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
              [](const proto::SyncPointNotice&) {}};
    }));
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

TEST_F(CoordinatorTest, RegisterTask_UnknownTask_InvalidArgumentNamingIt) {
  auto coordinator = Spawn();
  EXPECT_THAT(Call<proto::RegisterTaskResponse>(coordinator, Register("worker", 2, 5), Agent()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/job:worker/task:2")));
  EXPECT_THAT(Call<proto::RegisterTaskResponse>(coordinator, Register("ps", 0, 5), Agent()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/job:ps/task:0")));
}

}  // namespace
}  // namespace muster
