// The leader session actor over real TCP (a Leader with a job token in one actor system, the
// session in another): the right token yields an admitted leader, held while the session lives;
// a wrong token stops it in AUTHENTICATING, a missing leader in CONNECTING; it ends with its
// requester and with its leader.
#include <chrono>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/net/agent/session/leader_session_actor.h"
#include "muster/net/leader/leader.h"
#include "tests/net/two_nodes_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using namespace std::chrono_literals;
using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

constexpr char kToken[] = "s3cret-job-token";

class LeaderSessionTest : public testing::TwoNodesTest {
 protected:
  void SetUp() override {
    CoordinatorOptions options;
    auto* job = options.config.add_coordinated_job_list();
    job->set_name("worker");
    job->set_num_tasks(1);
    auto leader = Leader::Start(leader_system_, options, {.token = kToken});
    ASSERT_TRUE(leader.ok()) << leader.status();
    leader_ = *std::move(leader);
  }

  LeaderSessionOptions Options(std::string token) {
    return {.connect = {.host = "127.0.0.1", .port = leader_->port(), .timeout = 5s},
            .token = std::move(token),
            .authenticate_timeout = 5s};
  }

  absl::Status Insert(caf::scoped_actor& self, const CoordinatorActor& leader) {
    proto::InsertKeyValueRequest request;
    request.mutable_kv()->set_key("config/lr");
    request.mutable_kv()->set_value("v");
    absl::Status status = absl::InternalError("no reply");
    self->request(leader, 5s, request)
        .receive([&](proto::InsertKeyValueResponse&) { status = absl::OkStatus(); },
                 [&](caf::error& e) { status = ToStatus(e); });
    return status;
  }
};

TEST_F(LeaderSessionTest, RightToken_RunningWithAnAdmittedLeader) {
  caf::scoped_actor self{worker_system_};
  LeaderSessionReply reply = OpenLeaderSession(self, Options(kToken), 10s);
  ASSERT_THAT(reply.status, IsOk());
  ASSERT_TRUE(reply.leader);
  EXPECT_THAT(Insert(self, reply.leader), IsOk());
}

TEST_F(LeaderSessionTest, WrongToken_StopsInAuthenticatingWithTheGatesAnswer) {
  caf::scoped_actor self{worker_system_};
  LeaderSessionReply reply = OpenLeaderSession(self, Options("guess"), 10s);
  EXPECT_THAT(reply.status, StatusIs(Code::kUnauthenticated, HasSubstr("wrong job token")));
  EXPECT_EQ(reply.failed_in, SessionState::kAuthenticating);
  EXPECT_FALSE(reply.leader);
}

TEST_F(LeaderSessionTest, NothingListening_StopsInConnectingAtOnce) {
  caf::scoped_actor self{worker_system_};
  LeaderSessionOptions options = Options(kToken);
  options.connect.port = 1;
  options.connect.wait_for_leader = false;
  LeaderSessionReply reply = OpenLeaderSession(self, options, 10s);
  EXPECT_THAT(reply.status, StatusIs(Code::kUnavailable, HasSubstr("nothing listening")));
  EXPECT_EQ(reply.failed_in, SessionState::kConnecting);
}

TEST_F(LeaderSessionTest, RequesterGone_SessionEnds) {
  caf::scoped_actor watcher{worker_system_};
  LeaderSessionActor session = SpawnLeaderSession(worker_system_, Options(kToken));
  watcher->monitor(session);
  {
    caf::scoped_actor requester{worker_system_};
    bool running = false;
    requester->request(session, 10s, caf::connect_atom::value)
        .receive([&](LeaderSessionReply& reply) { running = reply.status.ok(); },
                 [&](caf::error&) {});
    ASSERT_TRUE(running);
  }
  bool ended = false;
  watcher->receive([&](caf::down_msg&) { ended = true; }, caf::after(5s) >> [] {});
  EXPECT_TRUE(ended);
}

TEST_F(LeaderSessionTest, LeaderGone_SessionEndsAndAskedAgainAnswersWhileRunning) {
  caf::scoped_actor self{worker_system_};
  LeaderSessionActor session = SpawnLeaderSession(worker_system_, Options(kToken));
  LeaderSessionReply first;
  self->request(session, 10s, caf::connect_atom::value)
      .receive([&](LeaderSessionReply& reply) { first = std::move(reply); }, [](caf::error&) {});
  ASSERT_THAT(first.status, IsOk());
  self->request(session, 10s, caf::connect_atom::value)
      .receive([&](LeaderSessionReply& reply) { EXPECT_EQ(reply.leader, first.leader); },
               [](caf::error& error) { ADD_FAILURE() << to_string(error); });
  self->monitor(session);
  leader_->Stop();
  bool ended = false;
  self->receive([&](caf::down_msg&) { ended = true; }, caf::after(5s) >> [] {});
  EXPECT_TRUE(ended);
}

}  // namespace
}  // namespace muster
