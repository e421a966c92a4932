// HaLeader in one process over real TCP and a real 3-member etcd cluster: two leaders of one HA
// job in actor systems of their own and an agent in a third. One serves, the other stands by
// and answers naming it; stopping the active one hands the job, with its state, to the standby,
// and the agent, given both addresses, follows. Bad options are refused with what to do.
#include "muster/net/ha/ha_leader.h"

#include <unistd.h>

#include <thread>

#include <absl/strings/str_cat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/net/agent/agent.h"
#include "muster/net/leader/standby_leader.h"
#include "muster/net/transport/node_config.h"
#include "tests/net/ha/etcd_cluster.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::IsOkAndHolds;
using ::muster::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Code = absl::StatusCode;

class HaLeaderTest : public testing::SharedEtcdTest {
 protected:
  static CoordinatorOptions Options(int tasks = 2) {
    CoordinatorOptions options;
    auto* job = options.config.add_coordinated_job_list();
    job->set_name("worker");
    job->set_num_tasks(tasks);
    options.config.set_heartbeat_timeout_in_ms(5000);
    return options;
  }

  absl::StatusOr<std::unique_ptr<HaLeader>> Start(caf::actor_system& system,
                                                  CoordinatorOptions options = Options(),
                                                  absl::Duration lease_ttl = absl::Seconds(2)) {
    return HaLeader::Start(system, std::move(options), {.port = 0},
                           {.etcd = cluster_->endpoints(), .name = name_, .lease_ttl = lease_ttl});
  }

  // Waits until `leader` names `active` (a standby's view).
  static bool Names(const HaLeader& leader, const std::string& active) {
    for (int i = 0; i < 100 && leader.active_leader() != active; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return leader.active_leader() == active;
  }

  NodeConfig a_config_;
  caf::actor_system a_{a_config_};
  NodeConfig b_config_;
  caf::actor_system b_{b_config_};
  NodeConfig worker_config_{WorkerNodeOptions()};
  caf::actor_system worker_{worker_config_};
};

TEST_F(HaLeaderTest, OneServesTheOtherStandsBy_StoppingTheActiveHandsOverTheJobWithItsState) {
  // A long lease: the takeover below is timed against it.
  const absl::Duration ttl = absl::Seconds(8);
  auto a = Start(a_, Options(), ttl);
  ASSERT_THAT(a, IsOk());
  ASSERT_TRUE((*a)->AwaitActive(absl::Seconds(10)));
  // Said with the role: whoever sees it active reads why at once.
  EXPECT_THAT((*a)->said(), StartsWith("active: serving HA job " + name_));
  EXPECT_THAT((*a)->recovery(), HasSubstr("empty, a new job"));
  auto b = Start(b_, Options(), ttl);
  ASSERT_THAT(b, IsOk());
  ASSERT_TRUE(Names(**b, (*a)->address()));
  EXPECT_EQ((*b)->role(), HaRole::kStandby);
  EXPECT_FALSE((*b)->coordinator());

  // The standby answers every call with Unavailable, naming the active leader.
  {
    auto remote = worker_.middleman().remote_actor<CoordinatorActor>("127.0.0.1", (*b)->port());
    ASSERT_TRUE(remote);
    caf::scoped_actor self{worker_};
    absl::Status answer;
    self->request(*remote, std::chrono::seconds(5), proto::GetTaskStateRequest())
        .receive([&](proto::GetTaskStateResponse&) { answer = absl::OkStatus(); },
                 [&](caf::error& error) { answer = ToStatus(error); });
    EXPECT_THAT(answer, StatusIs(Code::kUnavailable,
                                 HasSubstr("standby of HA job " + name_ +
                                           "; the active leader is at " + (*a)->address())));
    EXPECT_EQ(StandbyActiveLeader(answer), (*a)->address());
  }

  // An agent given the standby first reaches the active leader.
  AgentOptions options{.leader = (*b)->address() + "," + (*a)->address(),
                       .leader_reconnect_timeout = absl::Seconds(20)};
  auto agent = Agent::Create(worker_, options, [](const absl::Status&) {});
  ASSERT_THAT(agent, IsOk());
  ASSERT_THAT((*agent)->Connect(), IsOk());
  ASSERT_THAT((*agent)->InsertKeyValue("boot/k", "v"), IsOk());

  // The active one stops (and resigns): the standby takes over at once, with the state.
  (*a)->Stop();
  EXPECT_EQ((*a)->role(), HaRole::kStopped);
  EXPECT_THAT((*a)->said(), StartsWith("stopped: this leader of HA job " + name_));
  // Resigned: the standby takes over without waiting out the lease (TTL 8 s; the state loads
  // and the coordinator starts in well under a second here).
  EXPECT_TRUE((*b)->AwaitActive(ttl / 2));
  ASSERT_TRUE((*b)->AwaitActive(absl::Seconds(10)));
  EXPECT_THAT((*b)->said(), StartsWith("active: serving HA job " + name_));
  EXPECT_THAT((*b)->recovery(), HasSubstr("recovered 1 tasks (1 connected"));
  EXPECT_THAT((*agent)->TryGetKeyValue("boot/k"), IsOkAndHolds("v"));
  EXPECT_THAT((*agent)->InsertKeyValue("boot/after", "w"), IsOk());
  agent->reset();
  (*b)->Stop();
}

TEST_F(HaLeaderTest, BadOptions_AreRefusedWithWhatToDo) {
  CoordinatorOptions with_dir = Options();
  with_dir.state_dir = "/tmp/x";
  EXPECT_THAT(HaLeader::Start(a_, with_dir, {}, {.etcd = cluster_->endpoints(), .name = "n"}),
              StatusIs(Code::kInvalidArgument, HasSubstr("not both")));
  EXPECT_THAT(HaLeader::Start(a_, Options(), {}, {.etcd = cluster_->endpoints(), .name = "a/b"}),
              StatusIs(Code::kInvalidArgument, HasSubstr("HA name")));
  EXPECT_THAT(
      HaLeader::Start(
          a_, Options(), {},
          {.etcd = cluster_->endpoints(), .name = "n", .lease_ttl = absl::Milliseconds(500)}),
      StatusIs(Code::kInvalidArgument, HasSubstr("at least 1s")));
  EXPECT_THAT(HaLeader::Start(a_, Options(), {}, {.etcd = "127.0.0.1:1", .name = "n"}),
              StatusIs(Code::kUnavailable, HasSubstr("no etcd member answered at 127.0.0.1:1")));
}

TEST_F(HaLeaderTest, AnotherConfigurationUnderTheSameName_IsRefused) {
  auto a = Start(a_, Options(2));
  ASSERT_THAT(a, IsOk());
  EXPECT_THAT(Start(b_, Options(3)),
              StatusIs(Code::kFailedPrecondition, HasSubstr("runs another configuration")));
  auto same = Start(b_, Options(2));
  EXPECT_THAT(same, IsOk());
}

}  // namespace
}  // namespace muster
