// Direct key-value calls over real TCP on 127.0.0.1 (a Leader in one actor system, agents in
// another): the blocking key-value methods are answered over the agent's own connections to the
// leader's direct port with the same values and errors as through the agent actor; ephemeral
// writes and agents told not to still go through the actor; a waiting direct get ends with
// Cancelled at CancelGetKeyValue and Shutdown, and is made again through the actor when the
// leader goes away; a job token is presented; and the leader's endpoint refuses what breaks its
// bounds (no token, a wrong one, oversized and garbled frames, two calls at once), each with its
// status, while the job goes on. A cancel that lands while a get passes from a direct attempt to
// the agent actor is not lost.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/scoped_actor.hpp>

#include "muster/messages/direct/direct_frames.h"
#include "muster/messages/requests/kv_requests.h"
#include "muster/net/agent/agent.h"
#include "muster/net/agent/direct/direct_channel.h"
#include "muster/net/leader/leader.h"
#include "tests/net/two_nodes_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::IsOkAndHolds;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

using ::muster::testing::Jobs;

// A raw connection to the leader's direct port, speaking the frames itself.
class RawConnection {
 public:
  explicit RawConnection(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawConnection() { ::close(fd_); }

  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  bool Send(const proto::DirectRequest& request) { return Send(EncodeDirectFrame(request)); }
  // The next answer, or nullopt when the connection ended first (or 10 s passed).
  std::optional<proto::DirectResponse> Read() {
    std::string header = ReadBytes(kDirectHeaderBytes);
    if (header.size() != kDirectHeaderBytes) return std::nullopt;
    std::string payload = ReadBytes(DirectFrameLength(header));
    proto::DirectResponse response;
    if (!response.ParseFromString(payload)) return std::nullopt;
    return response;
  }
  // True when the leader closed the connection within 10 s (reading what it still sent).
  bool ClosedByPeer() {
    char buf[256];
    for (;;) {
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, 10'000) <= 0) return false;
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
  }

 private:
  std::string ReadBytes(size_t size) {
    std::string out;
    while (out.size() < size) {
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, 10'000) <= 0) break;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, std::min(sizeof buf, size - out.size()), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

  int fd_;
  bool connected_ = false;
};

proto::DirectRequest TryGet(const std::string& key) {
  proto::DirectRequest request;
  SetDirectCall(request, requests::TryGetKeyValue(key));
  return request;
}

proto::DirectRequest Authenticate(const std::string& token) {
  proto::DirectRequest request;
  request.mutable_authenticate()->set_token(token);
  return request;
}

class DirectCallsTest : public testing::TwoNodesTest {
 protected:
  void StartLeader(CoordinatorOptions options, LeaderEndpoint endpoint = {}) {
    auto leader = Leader::Start(leader_system_, std::move(options), std::move(endpoint));
    ASSERT_TRUE(leader.ok()) << leader.status();
    leader_ = *std::move(leader);
  }

  std::unique_ptr<Agent> Connected(int task, AgentOptions options = {}) {
    options.leader = leader_->address();
    options.task_id = task;
    options.register_timeout = absl::Seconds(10);
    auto agent = Agent::Create(worker_system_, options, nullptr);
    EXPECT_TRUE(agent.ok()) << agent.status();
    if (!agent.ok()) return nullptr;
    EXPECT_THAT((*agent)->Connect(), IsOk());
    return *std::move(agent);
  }
};

TEST_F(DirectCallsTest, KeyValueCalls_AnsweredDirectly_WithTheStoresValuesAndErrors) {
  StartLeader(Jobs(1));
  ASSERT_NE(leader_->direct_port(), 0);
  auto agent = Connected(0);
  ASSERT_NE(agent, nullptr);
  EXPECT_THAT(agent->InsertKeyValue("d/a", "one"), IsOk());
  EXPECT_THAT(agent->InsertKeyValue("d/a", "two"), StatusIs(Code::kAlreadyExists));
  EXPECT_THAT(agent->InsertKeyValue("d/a", "two", /*allow_overwrite=*/true), IsOk());
  EXPECT_EQ(*agent->GetKeyValue("d/a", absl::Seconds(5)), "two");
  EXPECT_EQ(*agent->TryGetKeyValue("d/a"), "two");
  EXPECT_THAT(agent->TryGetKeyValue("d/none"), StatusIs(Code::kNotFound));
  EXPECT_EQ(*agent->IncrementKeyValue("d/n", 5), 5);
  EXPECT_EQ(*agent->IncrementKeyValue("d/n", -2), 3);
  EXPECT_THAT(agent->IncrementKeyValue("d/a", 1), StatusIs(Code::kFailedPrecondition));
  auto swapped = agent->CompareAndSwap("d/a", std::string("two"), "three");
  ASSERT_THAT(swapped.status(), IsOk());
  EXPECT_TRUE(swapped->succeeded);
  auto refused = agent->CompareAndSwap("d/a", std::string("two"), "four");
  ASSERT_THAT(refused.status(), IsOk());
  EXPECT_FALSE(refused->succeeded);
  EXPECT_EQ(refused->current, "three");
  auto dir = agent->GetKeyValueDir("d");
  ASSERT_THAT(dir.status(), IsOk());
  EXPECT_EQ(dir->size(), 2u);
  EXPECT_THAT(agent->DeleteKeyValue("d/a"), IsOk());
  EXPECT_THAT(agent->TryGetKeyValue("d/a"), StatusIs(Code::kNotFound));
  EXPECT_THAT(agent->GetKeyValue("d/late", absl::Milliseconds(100)),
              StatusIs(Code::kDeadlineExceeded));
  EXPECT_THAT(agent->InsertKeyValue("", "x"), StatusIs(Code::kInvalidArgument));
  // Every call above was answered directly: 16 of them.
  EXPECT_EQ(agent->direct_calls_answered(), 16u);
}

TEST_F(DirectCallsTest, ALargeValuesConnectionIsNotKept_TheCallsAfterItStillGoDirect) {
  StartLeader(Jobs(1));
  auto agent = Connected(0);
  ASSERT_NE(agent, nullptr);
  // The leader closes a connection after a frame over 64 KiB; the agent keeps none such, so the
  // next write is not made on a closed connection (which would fail it with Unavailable).
  const std::string large(1 << 20, 'x');
  EXPECT_THAT(agent->InsertKeyValue("big", large), IsOk());
  EXPECT_THAT(agent->InsertKeyValue("small", "v"), IsOk());
  EXPECT_EQ(*agent->TryGetKeyValue("big"), large);  // a large answer, likewise
  EXPECT_EQ(*agent->IncrementKeyValue("n", 1), 1);
  EXPECT_EQ(agent->direct_calls_answered(), 4u);
}

TEST_F(DirectCallsTest, EphemeralWritesAndAgentsWithoutDirectCalls_GoThroughTheActor) {
  StartLeader(Jobs(2));
  auto agent = Connected(0);
  ASSERT_NE(agent, nullptr);
  EXPECT_THAT(agent->InsertKeyValue("e/k", "v", KvWriteOptions{.ephemeral = true}), IsOk());
  EXPECT_EQ(agent->direct_calls_answered(), 0u);
  auto plain = Connected(1, {.direct_calls = false});
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(*plain->TryGetKeyValue("e/k"), "v");
  EXPECT_EQ(plain->direct_calls_answered(), 0u);
  EXPECT_EQ(*agent->TryGetKeyValue("e/k"), "v");
  EXPECT_EQ(agent->direct_calls_answered(), 1u);
}

TEST_F(DirectCallsTest, MoreThanSixteenAgentsInOneActorSystem_CallThroughTheActor) {
  const int kAgents = AgentOptions::kMaxDirectAgentsPerSystem + 1;
  StartLeader(Jobs(kAgents));
  std::vector<std::unique_ptr<Agent>> agents;
  for (int task = 0; task < kAgents; ++task) {
    agents.push_back(Connected(task));
    ASSERT_NE(agents.back(), nullptr);
  }
  EXPECT_THAT(agents[0]->InsertKeyValue("k", "v"), IsOk());
  for (auto& agent : agents) {
    EXPECT_EQ(*agent->TryGetKeyValue("k"), "v");
    EXPECT_EQ(agent->direct_calls_answered(), 0u);
  }
  agents.pop_back();  // at the bound again: their calls go direct
  EXPECT_EQ(*agents[0]->TryGetKeyValue("k"), "v");
  EXPECT_EQ(agents[0]->direct_calls_answered(), 1u);
}

TEST_F(DirectCallsTest, ALeaderWithoutDirectCalls_AgentsCallThroughTheActor) {
  StartLeader(Jobs(1), {.direct_calls = false});
  EXPECT_EQ(leader_->direct_port(), 0);
  auto agent = Connected(0);
  ASSERT_NE(agent, nullptr);
  EXPECT_THAT(agent->InsertKeyValue("k", "v"), IsOk());
  EXPECT_EQ(*agent->TryGetKeyValue("k"), "v");
  EXPECT_EQ(agent->direct_calls_answered(), 0u);
}

TEST_F(DirectCallsTest, AWaitingDirectGet_EndsWithCancelled_AtCancelAndShutdown) {
  StartLeader(Jobs(1));
  auto agent = Connected(0);
  ASSERT_NE(agent, nullptr);
  auto get = std::async(std::launch::async, [&] { return agent->GetKeyValue("never"); });
  ASSERT_EQ(get.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  agent->CancelGetKeyValue("never");
  ASSERT_EQ(get.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_THAT(get.get(), StatusIs(Code::kCancelled, HasSubstr("GetKeyValue(never) was cancelled")));
  // The leader withdrew the get with its connection: a later insert wakes nobody, and a new get
  // is answered.
  EXPECT_THAT(agent->InsertKeyValue("never", "now"), IsOk());
  EXPECT_EQ(*agent->GetKeyValue("never"), "now");

  auto second = std::async(std::launch::async, [&] { return agent->GetKeyValue("later"); });
  ASSERT_EQ(second.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  EXPECT_THAT(agent->Shutdown(), IsOk());
  ASSERT_EQ(second.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_THAT(second.get(), StatusIs(Code::kCancelled, HasSubstr("task:0 is shutting down")));
}

// A binding's get falls back to the agent actor (CallAsync) after its direct attempt
// (TryDirect): a cancel that lands before the actor has the get is told to the actor again when
// the hold TryDirect handed over is released. A hold nobody cancelled changes nothing, and a get
// TryDirect answers hands none over.
TEST_F(DirectCallsTest, ACancelBetweenADirectAttemptAndTheActor_StillEndsTheGet) {
  StartLeader(Jobs(1));
  auto agent = Connected(0);
  ASSERT_NE(agent, nullptr);
  uint64_t hold = 0;
  auto get = std::async(std::launch::async, [&] {
    proto::GetKeyValueRequest waiting = requests::GetKeyValue("answered", absl::Seconds(20));
    return agent->TryDirect(waiting, "answered", nullptr, &hold);
  });
  ASSERT_EQ(get.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  agent->CancelGetKeyValue("another key");
  EXPECT_THAT(agent->InsertKeyValue("answered", "yes"), IsOk());
  ASSERT_EQ(get.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto got = get.get();
  ASSERT_TRUE(got.has_value());
  ASSERT_THAT(*got, IsOk());
  EXPECT_EQ((*got)->kv().value(), "yes");
  EXPECT_EQ(hold, 0u);

  // With no route (direct calls stopped), TryDirect gives the get back with its hold.
  agent->StopDirectCalls();
  proto::GetKeyValueRequest late = requests::GetKeyValue("late", absl::InfiniteDuration());
  EXPECT_FALSE(agent->TryDirect(late, "late", nullptr, &hold).has_value());
  ASSERT_NE(hold, 0u);
  agent->CancelGetKeyValue("late");  // neither a direct call nor the actor has the get yet
  auto answered = std::make_shared<std::promise<absl::StatusOr<proto::GetKeyValueResponse>>>();
  auto result = answered->get_future();
  caf::actor_addr call = agent->CallAsync<proto::GetKeyValueResponse>(
      [answered](absl::StatusOr<proto::GetKeyValueResponse> response) {
        answered->set_value(std::move(response));
      },
      late);
  // A get of the same key made after the cancel returned is not the cancel's.
  auto newer = std::make_shared<std::promise<absl::StatusOr<std::string>>>();
  auto newer_result = newer->get_future();
  agent->GetKeyValueAsync(
      "late", [newer](const absl::StatusOr<std::string>& value) { newer->set_value(value); },
      absl::Seconds(20));
  agent->ReleaseGet(hold, call);
  ASSERT_EQ(result.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_THAT(result.get().status(), StatusIs(Code::kCancelled));
  EXPECT_EQ(newer_result.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  EXPECT_THAT(agent->InsertKeyValue("late", "v"), IsOk());
  ASSERT_EQ(newer_result.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_THAT(newer_result.get(), IsOkAndHolds(std::string("v")));
}

// A direct attempt made with a hold a cancel already marked ends at once with the cancel's
// reason, before it is sent (the channel's own check, which closes the gap between TryDirect
// taking the hold and the call being in progress).
TEST_F(DirectCallsTest, ADirectGetWhoseHoldIsCancelled_EndsBeforeItIsSent) {
  StartLeader(Jobs(1));
  DirectChannel channel;
  channel.SetRoute(std::make_shared<DirectRoute>("127.0.0.1", leader_->direct_port(), ""));
  proto::DirectRequest get;
  SetDirectCall(get, requests::GetKeyValue("early", absl::Seconds(5)));
  uint64_t hold = channel.HoldGet("early");
  channel.Cancel("early", "cancelled by the test");
  DirectChannel::Result result =
      channel.Call(get, "early", absl::Now() + absl::Seconds(10), nullptr, hold);
  EXPECT_EQ(result.outcome, DirectChannel::Outcome::kCancelled);
  EXPECT_EQ(result.detail, "cancelled by the test");
  EXPECT_TRUE(channel.ReleaseGet(hold));
  EXPECT_EQ(channel.answered(), 0u);
  // Without a cancel the same channel answers (NotFound: nobody inserted "early").
  proto::DirectRequest try_get;
  SetDirectCall(try_get, requests::TryGetKeyValue("early"));
  result = channel.Call(try_get, "", absl::Now() + absl::Seconds(10));
  EXPECT_EQ(result.outcome, DirectChannel::Outcome::kAnswered);
  EXPECT_EQ(channel.answered(), 1u);
}

TEST_F(DirectCallsTest, TheLeaderGoesAway_AWaitingDirectGetEndsAsThroughTheActor) {
  StartLeader(Jobs(1));
  auto agent = Connected(0);
  ASSERT_NE(agent, nullptr);
  auto get = std::async(std::launch::async, [&] { return agent->GetKeyValue("never"); });
  ASSERT_EQ(get.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  leader_->Stop();
  ASSERT_EQ(get.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  // Without leader_reconnect_timeout a lost leader fails the agent's calls.
  absl::Status status = get.get().status();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.code(), Code::kDeadlineExceeded) << status;
}

TEST_F(DirectCallsTest, WithAJobToken_TheAgentPresentsIt_AndARawPeerIsRefusedWithout) {
  StartLeader(Jobs(1), {.token = "s3cret-token"});
  auto agent = Connected(0, {.token = "s3cret-token"});
  ASSERT_NE(agent, nullptr);
  EXPECT_THAT(agent->InsertKeyValue("t", "v"), IsOk());
  EXPECT_EQ(agent->direct_calls_answered(), 1u);

  RawConnection no_token(leader_->direct_port());
  ASSERT_TRUE(no_token.connected());
  ASSERT_TRUE(no_token.Send(TryGet("t")));
  auto refused = no_token.Read();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(DirectStatus(*refused).code(), Code::kUnauthenticated);
  EXPECT_TRUE(no_token.ClosedByPeer());

  RawConnection wrong(leader_->direct_port());
  ASSERT_TRUE(wrong.Send(Authenticate("guess")));
  auto denied = wrong.Read();
  ASSERT_TRUE(denied.has_value());
  EXPECT_EQ(DirectStatus(*denied).code(), Code::kUnauthenticated);
  EXPECT_THAT(denied->message(), ::testing::Not(HasSubstr("s3cret")));
  EXPECT_TRUE(wrong.ClosedByPeer());

  RawConnection right(leader_->direct_port());
  ASSERT_TRUE(right.Send(Authenticate("s3cret-token")));
  auto admitted = right.Read();
  ASSERT_TRUE(admitted.has_value());
  EXPECT_EQ(admitted->code(), 0);
  ASSERT_TRUE(right.Send(TryGet("t")));
  auto answer = right.Read();
  ASSERT_TRUE(answer.has_value());
  auto value = TakeDirectReply<proto::TryGetKeyValueResponse>(*answer);
  ASSERT_THAT(value.status(), IsOk());
  EXPECT_EQ(value->kv().value(), "v");

  // A frame over 16 KiB before the token closes the connection before its payload is read.
  RawConnection large(leader_->direct_port());
  ASSERT_TRUE(large.Send(std::string("\x00\x01\x00\x00", 4)));
  auto too_large = large.Read();
  ASSERT_TRUE(too_large.has_value());
  EXPECT_EQ(DirectStatus(*too_large).code(), Code::kResourceExhausted);
  EXPECT_TRUE(large.ClosedByPeer());
  EXPECT_EQ(*agent->TryGetKeyValue("t"), "v");
}

TEST_F(DirectCallsTest, FramesThatBreakTheBounds_CloseTheirConnection_TheJobGoesOn) {
  StartLeader(Jobs(1));
  auto agent = Connected(0);
  ASSERT_NE(agent, nullptr);
  const uint16_t port = leader_->direct_port();

  RawConnection garbage(port);
  ASSERT_TRUE(garbage.Send(std::string("\x00\x00\x00\x03\xff\xff\xff", 7)));
  auto bad = garbage.Read();
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(DirectStatus(*bad).code(), Code::kInvalidArgument);
  EXPECT_TRUE(garbage.ClosedByPeer());

  RawConnection huge(port);  // over the leader's --max-frame-size (8 MiB)
  ASSERT_TRUE(huge.Send(std::string("\x7f\x00\x00\x00", 4)));
  auto over = huge.Read();
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(DirectStatus(*over).code(), Code::kResourceExhausted);
  EXPECT_TRUE(huge.ClosedByPeer());

  RawConnection empty(port);
  ASSERT_TRUE(empty.Send(std::string("\x00\x00\x00\x00", 4)));
  EXPECT_TRUE(empty.ClosedByPeer());

  // An ephemeral write acts as its task: refused here, the connection stays.
  RawConnection ephemeral(port);
  proto::DirectRequest write;
  SetDirectCall(write, requests::InsertKeyValue("e", "v", false, /*ephemeral=*/true));
  ASSERT_TRUE(ephemeral.Send(write));
  auto not_direct = ephemeral.Read();
  ASSERT_TRUE(not_direct.has_value());
  EXPECT_EQ(DirectStatus(*not_direct).code(), Code::kInvalidArgument);
  ASSERT_TRUE(ephemeral.Send(TryGet("e")));
  auto absent = ephemeral.Read();
  ASSERT_TRUE(absent.has_value());
  EXPECT_EQ(DirectStatus(*absent).code(), Code::kNotFound);

  // A second call while the first (a get that waits) is unanswered.
  RawConnection twice(port);
  proto::DirectRequest get;
  SetDirectCall(get, requests::GetKeyValue("wait/k", absl::InfiniteDuration()));
  ASSERT_TRUE(twice.Send(EncodeDirectFrame(get) + EncodeDirectFrame(TryGet("x"))));
  auto second = twice.Read();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(DirectStatus(*second).code(), Code::kFailedPrecondition);
  EXPECT_TRUE(twice.ClosedByPeer());

  EXPECT_THAT(agent->InsertKeyValue("wait/k", "v"), IsOk());
  EXPECT_EQ(*agent->GetKeyValue("wait/k"), "v");
}

// A write re-sent with its request id after its connection was lost (here: sent again on a new
// connection, as the agent does through its actor) is answered from the reply the leader kept,
// without a state dir too: the counter counts it once.
TEST_F(DirectCallsTest, AWriteSentAgainWithItsRequestId_IsAppliedOnce) {
  StartLeader(Jobs(1));
  auto agent = Connected(0);
  ASSERT_NE(agent, nullptr);
  proto::IncrementKeyValueRequest increment = requests::IncrementKeyValue("once/n", 5);
  increment.mutable_request_id()->set_client(77);
  increment.mutable_request_id()->set_seq(1);
  proto::DirectRequest call;
  SetDirectCall(call, increment);
  for (int attempt = 0; attempt < 2; ++attempt) {
    RawConnection connection(leader_->direct_port());
    ASSERT_TRUE(connection.Send(call));
    auto answer = connection.Read();
    ASSERT_TRUE(answer.has_value());
    ASSERT_TRUE(answer->has_increment_key_value()) << answer->DebugString();
    EXPECT_EQ(answer->increment_key_value().kv().value(), "5") << "attempt " << attempt;
  }
  EXPECT_EQ(*agent->TryGetKeyValue("once/n"), "5");
  EXPECT_EQ(*agent->IncrementKeyValue("once/n", 1), 6);  // a new write (no id) is applied
}

// The replies the leader keeps of directory `directory` for re-sent writes.
int64_t KeptReplies(caf::actor_system& system, const CoordinatorActor& coordinator,
                    const std::string& directory) {
  caf::scoped_actor self{system};
  int64_t kept = -1;
  self->request(coordinator, caf::infinite, proto::GetKvStatsRequest{})
      .receive(
          [&](const proto::GetKvStatsResponse& stats) {
            for (const auto& dir : stats.directories()) {
              if (dir.directory() == directory) kept = dir.kept_replies();
            }
          },
          [&](const caf::error& error) { ADD_FAILURE() << caf::to_string(error); });
  return kept;
}

// Each write's request id names the oldest of the agent's writes still in flight, so that the
// leader keeps the replies of those only: after 50 writes, one reply, where a client that never
// says (a raw connection here) leaves one per write until it does. A copy of a write that
// arrives after its client said it had the answer (a frame of a connection it replaced) is
// refused with Aborted, not applied again.
TEST_F(DirectCallsTest, WritesTellTheLeaderWhatWasAnswered_ItKeepsOneReplyNotOnePerWrite) {
  StartLeader(Jobs(1));
  AgentOptions options;
  options.leader_reconnect_timeout = absl::Seconds(10);  // writes carry request ids
  auto agent = Connected(0, options);
  ASSERT_NE(agent, nullptr);
  const uint64_t direct_before = agent->direct_calls_answered();
  for (int i = 1; i <= 50; ++i) ASSERT_THAT(agent->IncrementKeyValue("kept/n", 1), IsOkAndHolds(i));
  EXPECT_EQ(agent->direct_calls_answered() - direct_before, 50u);
  EXPECT_EQ(KeptReplies(leader_system_, leader_->coordinator(), "kept"), 1);
  auto increment = [&](uint64_t seq, uint64_t answered_below) {
    proto::IncrementKeyValueRequest request = requests::IncrementKeyValue("kept/n", 1);
    request.mutable_request_id()->set_client(77);
    request.mutable_request_id()->set_seq(seq);
    request.mutable_request_id()->set_answered_below(answered_below);
    proto::DirectRequest call;
    SetDirectCall(call, request);
    RawConnection connection(leader_->direct_port());
    EXPECT_TRUE(connection.Send(call));
    return connection.Read().value_or(proto::DirectResponse());
  };
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    EXPECT_EQ(increment(seq, 0).increment_key_value().kv().value(), absl::StrCat(50 + seq));
  }
  EXPECT_EQ(KeptReplies(leader_system_, leader_->coordinator(), "kept"), 1 + 3);
  EXPECT_EQ(increment(3, 0).increment_key_value().kv().value(), "53");  // a re-send: its reply
  EXPECT_EQ(increment(4, 4).increment_key_value().kv().value(), "54");  // 1-3 answered
  EXPECT_EQ(KeptReplies(leader_system_, leader_->coordinator(), "kept"), 1 + 1);
  proto::DirectResponse late = increment(2, 0);
  EXPECT_EQ(late.code(), static_cast<int>(absl::StatusCode::kAborted)) << late.DebugString();
  EXPECT_THAT(late.message(), AllOf(HasSubstr("late copy"), HasSubstr("\"kept/n\"")));
  EXPECT_EQ(*agent->IncrementKeyValue("kept/n", 1), 55);  // the late copy was not applied
}

}  // namespace
}  // namespace muster
