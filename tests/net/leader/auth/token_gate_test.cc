// The job token over real TCP (a Leader in one actor system, clients in another): requests
// before the token are refused with Unauthenticated and change nothing, a wrong token is
// refused, the right one admits the node; agents present it before registering.
#include <chrono>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/net/agent/agent.h"
#include "muster/net/leader/auth/token_gate_actor.h"
#include "muster/net/leader/leader.h"
#include "muster/net/transport/node_config.h"
#include "tests/net/two_nodes_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using Code = absl::StatusCode;

constexpr char kToken[] = "s3cret-job-token";

class TokenGateTest : public testing::TwoNodesTest {
 protected:
  void SetUp() override {
    CoordinatorOptions options;
    auto* job = options.config.add_coordinated_job_list();
    job->set_name("worker");
    job->set_num_tasks(1);
    auto leader = Leader::Start(leader_system_, options, {.token = kToken});
    ASSERT_TRUE(leader.ok()) << leader.status();
    leader_ = *std::move(leader);
    auto remote =
        worker_system_.middleman().remote_actor<CoordinatorActor>("127.0.0.1", leader_->port());
    ASSERT_TRUE(remote) << worker_system_.render(remote.error());
    remote_ = *remote;
  }

  // From one actor for the whole test: the leader admits a node while the actor that presented
  // the token lives.
  template <class Response, class Request>
  absl::StatusOr<Response> Ask(const Request& request) {
    absl::StatusOr<Response> result = absl::InternalError("no reply");
    client_self_->request(remote_, std::chrono::seconds(5), request)
        .receive([&](Response& r) { result = std::move(r); },
                 [&](caf::error& e) { result = ToStatus(e); });
    return result;
  }

  absl::Status Authenticate(const std::string& token) {
    proto::AuthenticateRequest request;
    request.set_token(token);
    return Ask<proto::AuthenticateResponse>(request).status();
  }

  absl::Status Insert(const std::string& key) {
    proto::InsertKeyValueRequest request;
    request.mutable_kv()->set_key(key);
    request.mutable_kv()->set_value("v");
    return Ask<proto::InsertKeyValueResponse>(request).status();
  }

  // Read through the coordinator itself, in the leader's process.
  absl::Status LocalTryGet(const std::string& key) {
    caf::scoped_actor self{leader_system_};
    proto::TryGetKeyValueRequest request;
    request.set_key(key);
    absl::Status status = absl::InternalError("no reply");
    self->request(leader_->coordinator(), std::chrono::seconds(5), request)
        .receive([&](proto::TryGetKeyValueResponse&) { status = absl::OkStatus(); },
                 [&](caf::error& e) { status = ToStatus(e); });
    return status;
  }

  // The worker's connection to the leader was closed (its proxy of the gate goes down), and the
  // leader still serves: its coordinator locally, and a new node that presents the token.
  void ExpectConnectionClosedAndLeaderServing() {
    client_self_->monitor(remote_);
    bool closed = false;
    client_self_->receive([&](caf::down_msg&) { closed = true; },
                          caf::after(std::chrono::seconds(5)) >> [] {});
    EXPECT_TRUE(closed) << "the connection that carried the message is still open";
    EXPECT_THAT(LocalTryGet("config/lr"), StatusIs(Code::kNotFound));
    NodeConfig other_config{WorkerNodeOptions()};
    caf::actor_system other{other_config};
    auto agent = Agent::Create(
        other,
        {.leader = leader_->address(), .register_timeout = absl::Seconds(5), .token = kToken},
        nullptr);
    ASSERT_TRUE(agent.ok());
    EXPECT_THAT((*agent)->Connect(), IsOk());
    EXPECT_THAT((*agent)->InsertKeyValue("config/lr", "v"), IsOk());
    EXPECT_THAT(LocalTryGet("config/lr"), IsOk());
    EXPECT_THAT((*agent)->Shutdown(), IsOk());
  }

  CoordinatorActor remote_;
  caf::scoped_actor client_self_{worker_system_};
};

TEST_F(TokenGateTest, RequestWithoutToken_UnauthenticatedNothingChanged) {
  EXPECT_THAT(Insert("config/lr"),
              StatusIs(Code::kUnauthenticated,
                       AllOf(HasSubstr("requires the job token"),
                             HasSubstr("MUSTER_TOKEN_FILE=FILE"), Not(HasSubstr("AgentOptions")))));
  EXPECT_THAT(LocalTryGet("config/lr"), StatusIs(Code::kNotFound));
}

TEST_F(TokenGateTest, WrongToken_UnauthenticatedAndStillRefused) {
  EXPECT_THAT(Authenticate("guess"),
              StatusIs(Code::kUnauthenticated, HasSubstr("wrong job token")));
  EXPECT_THAT(Authenticate(""), StatusIs(Code::kUnauthenticated));
  EXPECT_THAT(Insert("config/lr"), StatusIs(Code::kUnauthenticated));
  EXPECT_THAT(LocalTryGet("config/lr"), StatusIs(Code::kNotFound));
}

TEST_F(TokenGateTest, RightToken_NodeAdmittedWhileThePresentingActorLives) {
  ASSERT_THAT(Authenticate(kToken), IsOk());
  EXPECT_THAT(Insert("config/lr"), IsOk());
  EXPECT_THAT(LocalTryGet("config/lr"), IsOk());
  {
    caf::scoped_actor other{worker_system_};  // another actor of the admitted node
    proto::TryGetKeyValueRequest get;
    get.set_key("config/lr");
    absl::Status status = absl::InternalError("no reply");
    other->request(remote_, std::chrono::seconds(5), get)
        .receive([&](proto::TryGetKeyValueResponse&) { status = absl::OkStatus(); },
                 [&](caf::error& e) { status = ToStatus(e); });
    EXPECT_THAT(status, IsOk());
  }
}

// The job's events are read like the job's state: by admitted nodes only.
TEST_F(TokenGateTest, WatchEvents_RefusedBeforeTheTokenAnsweredAfter) {
  EXPECT_THAT(Ask<proto::WatchEventsResponse>(proto::WatchEventsRequest()).status(),
              StatusIs(Code::kUnauthenticated, HasSubstr("requires the job token")));
  ASSERT_THAT(Authenticate(kToken), IsOk());
  auto events = Ask<proto::WatchEventsResponse>(proto::WatchEventsRequest());
  ASSERT_THAT(events, IsOk());
  ASSERT_GE(events->events_size(), 1);
  EXPECT_EQ(events->events(0).kind(), proto::LEADER_STARTED);
  EXPECT_EQ(events->events(0).seq(), 1);
}

// A control message of CAF's actors from another node is refused at the wire (FrameGuard): the
// connection that carried it is closed, and the leader goes on serving everyone else.
TEST_F(TokenGateTest, ErrorMessageFromAnotherNode_RefusedAtTheWireLeaderStaysUp) {
  // CAF's default error handler would end the gate, and the coordinator linked to it.
  client_self_->send(caf::actor_cast<caf::actor>(remote_), ToError(absl::InternalError("boom")));
  ExpectConnectionClosedAndLeaderServing();
}

// CAF 0.17 ends an actor on an exit with reason kill before any handler of its own runs.
TEST_F(TokenGateTest, ExitKillFromAnotherNode_RefusedAtTheWireLeaderStaysUp) {
  client_self_->send_exit(remote_, caf::exit_reason::kill);
  ExpectConnectionClosedAndLeaderServing();
}

// A link from another node would end the gate (and the coordinator) when that node went away.
// CAF sends it as a routed message, refused as such; a direct one is refused as a control
// message (FrameGuardTest.Inbound_ControlMessagesOfCafActors_PermissionDenied).
TEST_F(TokenGateTest, LinkFromAnotherNode_RefusedAtTheWireLeaderStaysUp) {
  caf::scoped_actor linker{worker_system_};
  linker->link_to(remote_);
  ExpectConnectionClosedAndLeaderServing();
}

// The coordinator answers through the gate in its own name, and CAF delivers a message to any
// actor that ever sent one to another node, by its id: a node no longer admitted that addresses
// the coordinator directly is refused at the wire (only the gate is published).
TEST_F(TokenGateTest, CoordinatorAddressedDirectly_RefusedAtTheWireNothingChanged) {
  caf::actor coordinator;
  {
    caf::scoped_actor presenter{worker_system_};
    proto::AuthenticateRequest authenticate;
    authenticate.set_token(kToken);
    presenter->request(remote_, std::chrono::seconds(5), authenticate)
        .receive([](proto::AuthenticateResponse&) {}, [](caf::error&) {});
    proto::InsertKeyValueRequest insert;
    insert.mutable_kv()->set_key("config/lr");
    insert.mutable_kv()->set_value("v");
    presenter->request(remote_, std::chrono::seconds(5), insert)
        .receive(
            [&](proto::InsertKeyValueResponse&) {
              coordinator = caf::actor_cast<caf::actor>(presenter->current_sender());
            },
            [](caf::error&) {});
  }  // the presenter ends: its node is no longer admitted
  ASSERT_TRUE(coordinator);
  ASSERT_NE(coordinator.id(), remote_.id());  // answered by the coordinator itself
  absl::Status through_gate = absl::OkStatus();
  for (int i = 0; i < 100 && through_gate.ok(); ++i) through_gate = Insert("config/other");
  ASSERT_THAT(through_gate, StatusIs(Code::kUnauthenticated));
  proto::InsertKeyValueRequest forged;
  forged.mutable_kv()->set_key("config/forged");
  forged.mutable_kv()->set_value("v");
  absl::Status direct = absl::OkStatus();
  client_self_->request(coordinator, std::chrono::seconds(2), forged)
      .receive([](proto::InsertKeyValueResponse&) {}, [&](caf::error& e) { direct = ToStatus(e); });
  EXPECT_FALSE(direct.ok());
  EXPECT_THAT(LocalTryGet("config/forged"), StatusIs(Code::kNotFound));
}

// The gate is linked to the coordinator before any message reaches it: stopping the leader ends
// every actor of its node (else the actor system's shutdown waits for the gate forever).
TEST_F(TokenGateTest, NoMessageEverReachedTheGate_StopEndsEveryActorOfTheLeader) {
  leader_.reset();
  caf::scoped_actor probe{leader_system_};  // counts itself
  for (int i = 0; i < 500 && leader_system_.registry().running() > 1; ++i) {
    probe->receive(caf::after(std::chrono::milliseconds(10)) >> [] {});
  }
  EXPECT_EQ(leader_system_.registry().running(), 1u);
}

TEST_F(TokenGateTest, Agent_WithTokenConnectsWithoutIsRefused) {
  auto without =
      Agent::Create(worker_system_,
                    {.leader = leader_->address(), .register_timeout = absl::Seconds(5)}, nullptr);
  ASSERT_TRUE(without.ok());
  EXPECT_THAT((*without)->Connect(), StatusIs(Code::kUnauthenticated));
  NodeConfig other_config{WorkerNodeOptions()};  // a node that never authenticated
  caf::actor_system other{other_config};
  auto wrong = Agent::Create(
      other, {.leader = leader_->address(), .register_timeout = absl::Seconds(5), .token = "guess"},
      nullptr);
  ASSERT_TRUE(wrong.ok());
  EXPECT_THAT((*wrong)->Connect(), StatusIs(Code::kUnauthenticated, HasSubstr("wrong job token")));
  wrong->reset();
  auto with = Agent::Create(
      other, {.leader = leader_->address(), .register_timeout = absl::Seconds(5), .token = kToken},
      nullptr);
  ASSERT_TRUE(with.ok());
  EXPECT_THAT((*with)->Connect(), IsOk());
  EXPECT_THAT((*with)->InsertKeyValue("k", "v"), IsOk());
  EXPECT_THAT((*with)->Shutdown(), IsOk());
}

TEST(TokensEqualTest, EqualOnlyForTheSameNonEmptyBytes) {
  EXPECT_TRUE(TokensEqual("abc", "abc"));
  EXPECT_FALSE(TokensEqual("abd", "abc"));
  EXPECT_FALSE(TokensEqual("ab", "abc"));
  EXPECT_FALSE(TokensEqual("abcd", "abc"));
  EXPECT_FALSE(TokensEqual("", ""));
  EXPECT_FALSE(TokensEqual(std::string("a\0c", 3), "abc"));
}

}  // namespace
}  // namespace muster
