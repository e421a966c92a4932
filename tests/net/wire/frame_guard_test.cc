#include "muster/net/transport/wire/frame_guard.h"

#include <string>
#include <utility>
#include <vector>

#include <absl/strings/escaping.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/io/middleman.hpp>
#include <caf/message.hpp>
#include <caf/message_id.hpp>
#include <caf/system_messages.hpp>

#include "tests/testing/basp_header.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

constexpr uint8_t kServerHandshake = 0;
constexpr uint8_t kClientHandshake = 1;
constexpr uint8_t kDirectMessage = 2;
constexpr uint8_t kRoutedMessage = 3;
constexpr uint8_t kHeartbeat = 6;

std::string Header(uint8_t operation, uint32_t length, uint64_t message_id = 0) {
  return ::muster::testing::BaspHeader(operation, length, message_id);
}

// A direct message's payload as CAF writes it: the forwarding stack, then the message.
std::string DirectPayload(const caf::message& message,
                          std::vector<caf::strong_actor_ptr> stages = {}) {
  caf::actor_system_config config;  // for the type names of CAF's own types
  caf::actor_system system{config};
  std::vector<char> bytes;
  caf::binary_serializer sink{system, bytes};
  caf::message copy = message;
  EXPECT_FALSE(sink(stages, copy));
  return std::string(bytes.begin(), bytes.end());
}

constexpr uint64_t kAnswer = caf::message_id::response_flag_mask | 7;
constexpr uint64_t kOneWay = caf::message_id::default_async_value;

absl::Span<const char> Bytes(const std::string& s) { return absl::MakeConstSpan(s); }

WireLimits Limits() {
  WireLimits limits;
  limits.max_frame_bytes = 1000;
  limits.max_handshake_bytes = 100;
  return limits;
}

TEST(FrameGuardTest, Inbound_HandshakeThenMessages_Pass) {
  FrameGuard guard(Limits(), /*inbound=*/true);
  EXPECT_THAT(guard.Check(Bytes(Header(kClientHandshake, 50))), IsOk());
  EXPECT_FALSE(guard.handshake_done());
  EXPECT_THAT(guard.Check(Bytes(std::string(50, 'x'))), IsOk());
  EXPECT_TRUE(guard.handshake_done());
  std::string payload = DirectPayload(caf::make_message(std::string("config/lr"), int32_t{3}));
  EXPECT_THAT(guard.Check(Bytes(Header(kDirectMessage, payload.size()))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(payload)), IsOk());
  EXPECT_THAT(guard.Check(Bytes(Header(kHeartbeat, 0))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(Header(kDirectMessage, 1))), IsOk());
}

// An inbound connection of a node that published `published` (null: no check), after its
// handshake, then one direct message to `receiver`: the guard's verdict on its payload.
absl::Status Verdict(const PublishedActors* published, const std::string& payload,
                     uint64_t receiver, uint64_t message_id = 0, uint8_t flags = 0) {
  FrameGuard guard(Limits(), /*inbound=*/true, published);
  EXPECT_THAT(guard.Check(Bytes(Header(kClientHandshake, 10))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(std::string(10, 'x'))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(::muster::testing::BaspHeader(kDirectMessage, payload.size(),
                                                              message_id, flags, receiver))),
              IsOk());
  return guard.Check(Bytes(payload));
}

absl::Status InboundVerdict(const std::string& payload, uint64_t message_id = 0) {
  return Verdict(nullptr, payload, /*receiver=*/0, message_id);
}

absl::Status VerdictWithPublished(const PublishedActors& published, const std::string& payload,
                                  uint64_t receiver, uint64_t message_id = 0, uint8_t flags = 0) {
  return Verdict(&published, payload, receiver, message_id, flags);
}

TEST(FrameGuardTest, Inbound_ControlMessagesOfCafActors_PermissionDenied) {
  caf::actor_addr nobody;
  const std::vector<caf::message> control = {
      caf::make_message(caf::exit_msg{nobody, caf::exit_reason::kill}),
      caf::make_message(caf::exit_msg{nobody, caf::exit_reason::user_shutdown}),
      caf::make_message(caf::down_msg{nobody, caf::exit_reason::kill}),
      caf::make_message(caf::link_atom::value, caf::strong_actor_ptr{}),
      caf::make_message(caf::unlink_atom::value, caf::strong_actor_ptr{}),
      caf::make_message(caf::timeout_msg{caf::receive_atom::value, 1}),
      caf::make_message(caf::make_error(caf::sec::runtime_error)),
  };
  for (const caf::message& message : control) {
    EXPECT_THAT(InboundVerdict(DirectPayload(message)),
                StatusIs(Code::kPermissionDenied, HasSubstr("control message of CAF's actors")))
        << caf::to_string(message);
  }
  // The name in the refusal is the message's.
  EXPECT_THAT(InboundVerdict(DirectPayload(caf::make_message(caf::exit_msg{}))),
              StatusIs(Code::kPermissionDenied, HasSubstr("@<>+@exit")));
}

TEST(FrameGuardTest, Inbound_ErrorAnsweringARequest_Passes) {
  caf::message error = caf::make_message(caf::make_error(caf::sec::runtime_error));
  EXPECT_THAT(InboundVerdict(DirectPayload(error), kAnswer), IsOk());
  EXPECT_THAT(InboundVerdict(DirectPayload(error), /*request*/ 7),
              StatusIs(Code::kPermissionDenied));
}

TEST(FrameGuardTest, Inbound_ForwardingStack_PermissionDenied) {
  std::vector<caf::strong_actor_ptr> stages(2);
  EXPECT_THAT(InboundVerdict(DirectPayload(caf::make_message(std::string("k")), stages)),
              StatusIs(Code::kPermissionDenied, HasSubstr("a forwarding stack of 2 actors")));
}

TEST(FrameGuardTest, Inbound_UnreadablePayload_InvalidArgument) {
  EXPECT_THAT(InboundVerdict(std::string(100, '\xff')),  // a size that never ends
              StatusIs(Code::kInvalidArgument, HasSubstr("forwarding stack cannot be read")));
  EXPECT_THAT(InboundVerdict(std::string(1, '\0')),
              StatusIs(Code::kInvalidArgument, HasSubstr("type names cannot be read")));
  std::string payload = DirectPayload(caf::make_message(std::string("config/lr")));
  EXPECT_THAT(InboundVerdict(payload.substr(0, 4)),  // the type names cut short
              StatusIs(Code::kInvalidArgument, HasSubstr("type names cannot be read")));
  FrameGuard guard(Limits(), /*inbound=*/true);
  ASSERT_THAT(guard.Check(Bytes(Header(kClientHandshake, 10))), IsOk());
  ASSERT_THAT(guard.Check(Bytes(std::string(10, 'x'))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(Header(kDirectMessage, 0))),
              StatusIs(Code::kInvalidArgument, HasSubstr("without payload")));
}

TEST(FrameGuardTest, Inbound_MessagesOnlyToPublishedActorsOrAnswers) {
  PublishedActors published;
  published.Add(5);
  std::string request = DirectPayload(caf::make_message(std::string("config/lr")));
  EXPECT_THAT(VerdictWithPublished(published, request, 5), IsOk());
  EXPECT_THAT(VerdictWithPublished(published, request, 6),
              StatusIs(Code::kPermissionDenied, HasSubstr("actor 6, which this node did not")));
  EXPECT_THAT(VerdictWithPublished(published, request, 6, kAnswer), IsOk());
  // CAF's own exchange when nodes connect: a request to the named spawn server, and its reply
  // to the helper actor that asked.
  std::string info = DirectPayload(
      caf::make_message(caf::sys_atom::value, caf::get_atom::value, std::string("info")));
  const uint64_t spawn_server = static_cast<uint64_t>(caf::atom("SpawnServ"));
  EXPECT_THAT(VerdictWithPublished(published, info, spawn_server, 0, /*named=*/1), IsOk());
  // Its reply (to the helper actor that asked) from a peer whose node is unknown.
  std::string info_reply = DirectPayload(caf::make_message(
      caf::ok_atom::value, std::string("info"), caf::strong_actor_ptr{}, std::string("x")));
  EXPECT_THAT(VerdictWithPublished(published, info_reply, 6, kOneWay),
              StatusIs(Code::kPermissionDenied, HasSubstr("did not publish")));
  // Anything else to a named actor (the config server answers what the node's configuration
  // holds).
  std::string get =
      DirectPayload(caf::make_message(caf::get_atom::value, std::string("muster.tls-key")));
  EXPECT_THAT(VerdictWithPublished(published, get, static_cast<uint64_t>(caf::atom("ConfigServ")),
                                   0, /*named=*/1),
              StatusIs(Code::kPermissionDenied, HasSubstr("named actor")));
  // A node that published nothing through Muster keeps CAF's rule.
  EXPECT_THAT(VerdictWithPublished(PublishedActors{}, request, 6), IsOk());
}

TEST(FrameGuardTest, Inbound_StreamMessageId_PermissionDenied) {
  std::string payload = DirectPayload(caf::make_message(std::string("k")));
  for (uint64_t category : {2, 3}) {
    EXPECT_THAT(InboundVerdict(payload, category << 60 | 7),
                StatusIs(Code::kPermissionDenied, HasSubstr("stream message id")));
  }
  EXPECT_THAT(InboundVerdict(payload, uint64_t{1} << 60 | 7), IsOk());  // normal category
}

// Node ids as CAF serializes them; the guard compares bytes.
constexpr char kOwnNode[] = "own-node-id-bytes";
constexpr char kPeerNode[] = "peer-node-id-bytes";

// An inbound connection of a node whose id is kOwnNode; the peer's handshake names `peer`.
FrameGuard ConnectedAs(const std::string& peer, absl::Status* handshake) {
  FrameGuard guard(Limits(), /*inbound=*/true, nullptr, kOwnNode);
  EXPECT_THAT(guard.Check(Bytes(Header(kClientHandshake, peer.size()))), IsOk());
  *handshake = guard.Check(Bytes(peer));
  return guard;
}

TEST(FrameGuardTest, Inbound_HandshakeClaimingThisNodesId_PermissionDenied) {
  absl::Status handshake;
  ConnectedAs(kOwnNode, &handshake);
  EXPECT_THAT(handshake, StatusIs(Code::kPermissionDenied, HasSubstr("this node's own id")));
  FrameGuard guard = ConnectedAs(kPeerNode, &handshake);
  EXPECT_THAT(handshake, IsOk());
  // CAF may repeat the handshake, as the same node only.
  ASSERT_THAT(guard.Check(Bytes(Header(kClientHandshake, sizeof(kPeerNode) - 1))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(kPeerNode)), IsOk());
  const std::string other = "another-node-bytes";
  ASSERT_THAT(guard.Check(Bytes(Header(kClientHandshake, other.size()))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(other)),
              StatusIs(Code::kPermissionDenied, HasSubstr("second handshake naming another")));
}

TEST(FrameGuardTest, Inbound_MonitorAndDownFramesOnlyAboutThePeerAndThisNode) {
  constexpr uint8_t kMonitorMessage = 4;
  constexpr uint8_t kDownMessage = 5;
  const std::string error = "error bytes";
  for (uint8_t operation : {kMonitorMessage, kDownMessage}) {
    for (const auto& [payload, ok] : std::vector<std::pair<std::string, bool>>{
             {std::string(kPeerNode) + kOwnNode + error, true},
             {std::string("victim-node-id-byte") + kOwnNode + error, false},   // another node's
             {std::string(kPeerNode) + "third-node-id-bytes" + error, false},  // to be forwarded
             {std::string(kPeerNode), false}}) {
      absl::Status handshake;
      FrameGuard guard = ConnectedAs(kPeerNode, &handshake);
      ASSERT_THAT(guard.Check(Bytes(Header(operation, payload.size()))), IsOk());
      if (ok) {
        EXPECT_THAT(guard.Check(Bytes(payload)), IsOk());
      } else {
        EXPECT_THAT(guard.Check(Bytes(payload)),
                    StatusIs(Code::kPermissionDenied, HasSubstr("naming another node")))
            << static_cast<int>(operation) << " " << payload;
      }
    }
  }
}

// A node (its own actor system) with one actor, its spawn server stand-in: CAF's node-info
// reply as that node sends it, with the node's id as its handshakes carry it.
class NodeInfoReplyTest : public ::testing::Test {
 protected:
  NodeInfoReplyTest() : system_(Config(config_)) {
    spawn_server_ = caf::actor_cast<caf::strong_actor_ptr>(
        system_.spawn([]() -> caf::behavior { return {[](int) {}}; }));
    std::vector<char> bytes;
    caf::binary_serializer sink{system_, bytes};
    EXPECT_FALSE(sink(system_.node()));
    node_.assign(bytes.begin(), bytes.end());
  }
  ~NodeInfoReplyTest() override { caf::anon_send_exit(spawn_server_, caf::exit_reason::kill); }

  static caf::actor_system_config& Config(caf::actor_system_config& config) {
    config.load<caf::io::middleman>();
    return config;
  }

  std::string Reply(caf::strong_actor_ptr server, const std::string& name,
                    const std::string& key = "info") const {
    return DirectPayload(caf::make_message(caf::ok_atom::value, key, server, name));
  }
  std::string Reply() const { return Reply(spawn_server_, "spawn_server"); }

  // An inbound connection of node `own` that published actor 5, from the peer node `peer`,
  // then one direct message to actor 6: the verdict on its payload.
  static absl::Status Verdict(const std::string& own, const std::string& peer,
                              const std::string& payload, uint64_t message_id = kOneWay) {
    PublishedActors published;
    published.Add(5);
    FrameGuard guard(Limits(), /*inbound=*/true, &published, own);
    EXPECT_THAT(guard.Check(Bytes(Header(kClientHandshake, peer.size()))), IsOk());
    EXPECT_THAT(guard.Check(Bytes(peer)), IsOk());
    EXPECT_THAT(guard.Check(Bytes(::muster::testing::BaspHeader(kDirectMessage, payload.size(),
                                                                message_id, 0, /*receiver=*/6))),
                IsOk());
    return guard.Check(Bytes(payload));
  }

  // A node id of this process's guards that no other test uses (each pair passes once).
  static std::string OwnNode() {
    static int next = 0;
    return "own-node-" + std::to_string(next++);
  }

  caf::actor_system_config config_;
  caf::actor_system system_;
  caf::strong_actor_ptr spawn_server_;
  std::string node_;
};

// CAF's reply passes once per pair of nodes: CAF asks each node once per actor system.
TEST_F(NodeInfoReplyTest, TheSpawnServersReplyOfThePeer_PassesOncePerPairOfNodes) {
  const std::string own = OwnNode();
  EXPECT_THAT(Verdict(own, node_, Reply()), IsOk());
  EXPECT_THAT(Verdict(own, node_, Reply()),
              StatusIs(Code::kPermissionDenied, HasSubstr("actor 6, which this node did not")));
  EXPECT_THAT(Verdict(OwnNode(), node_, Reply()), IsOk());  // another node of the process
}

// The reply's shape with anything but CAF's values: a peer's text for an actor to print, another
// node's actor, no actor, not one-way.
TEST_F(NodeInfoReplyTest, OtherValuesOrMessageIds_PermissionDenied) {
  const std::string own = OwnNode();
  caf::actor_system_config other_config;
  caf::actor_system other{Config(other_config)};
  caf::strong_actor_ptr other_actor = caf::actor_cast<caf::strong_actor_ptr>(
      other.spawn([]() -> caf::behavior { return {[](int) {}}; }));
  for (const std::string& payload :
       {Reply(spawn_server_, "\x1b[31m\x1b[2J"), Reply(spawn_server_, "spawn_serverx"),
        Reply(spawn_server_, "spawn_server", "infox"), Reply(other_actor, "spawn_server"),
        Reply(nullptr, "spawn_server"), Reply() + "x"}) {
    EXPECT_THAT(Verdict(own, node_, payload),
                StatusIs(Code::kPermissionDenied, HasSubstr("did not publish")))
        << absl::CHexEscape(payload);
  }
  for (uint64_t message_id : {uint64_t{0}, uint64_t{7}, kOneWay | 7}) {
    EXPECT_THAT(Verdict(own, node_, Reply(), message_id),
                StatusIs(Code::kPermissionDenied, HasSubstr("did not publish")))
        << message_id;
  }
  EXPECT_THAT(Verdict(own, node_, Reply()), IsOk());  // none of these used the pair's turn
  caf::anon_send_exit(other_actor, caf::exit_reason::kill);
}

TEST(PublishedActorsTest, AnyActorUntilOneIsAddedThenOnlyThoseUpToTheCapacity) {
  PublishedActors published;
  EXPECT_TRUE(published.MayReceive(9));
  for (uint64_t id = 1; id <= PublishedActors::kCapacity; ++id) EXPECT_TRUE(published.Add(id));
  EXPECT_FALSE(published.Add(1000));
  EXPECT_TRUE(published.MayReceive(1));
  EXPECT_TRUE(published.MayReceive(PublishedActors::kCapacity));
  EXPECT_FALSE(published.MayReceive(1000));
}

TEST(PublishedActorsTest, Retired_StillAcceptedUntilItsPlaceIsTaken_OthersNeverMove) {
  PublishedActors published;
  for (uint64_t id = 1; id <= PublishedActors::kCapacity; ++id) ASSERT_TRUE(published.Add(id));
  EXPECT_FALSE(published.Add(1000));
  EXPECT_TRUE(published.Remove(3));
  EXPECT_FALSE(published.Remove(3));
  EXPECT_TRUE(published.MayReceive(3));  // a message on its way to a stopped leader
  EXPECT_TRUE(published.Add(1000));      // takes the retired place
  EXPECT_FALSE(published.MayReceive(3));
  EXPECT_TRUE(published.MayReceive(1000));
  for (uint64_t id : {1, 2, 4, 64}) EXPECT_TRUE(published.MayReceive(id)) << id;
  EXPECT_FALSE(published.Add(1001));
  EXPECT_FALSE(published.MayReceive(1001));
}

TEST(PublishedActorsTest, Forgotten_NotAcceptedAndItsPlaceIsFree) {
  PublishedActors published;
  for (uint64_t id = 1; id <= PublishedActors::kCapacity; ++id) ASSERT_TRUE(published.Add(id));
  EXPECT_TRUE(published.Forget(5));
  EXPECT_FALSE(published.MayReceive(5));
  EXPECT_FALSE(published.MayReceive(0));
  EXPECT_TRUE(published.Add(1000));
  EXPECT_TRUE(published.MayReceive(1000));
  EXPECT_TRUE(published.MayReceive(6));
}

TEST(PublishedActorsTest, AllRetired_OnlyThoseAccepted_NotCafsOpenRuleAgain) {
  PublishedActors published;
  ASSERT_TRUE(published.Add(7));
  ASSERT_TRUE(published.Remove(7));
  EXPECT_TRUE(published.MayReceive(7));
  EXPECT_FALSE(published.MayReceive(9));
  ASSERT_TRUE(published.Add(8));  // a free place first: 7 stays retired, not replaced
  EXPECT_TRUE(published.MayReceive(8));
  EXPECT_TRUE(published.MayReceive(7));
}

TEST(FrameGuardTest, Outbound_ControlMessagesFromTheLeader_Pass) {
  FrameGuard guard(Limits(), /*inbound=*/false);
  ASSERT_THAT(guard.Check(Bytes(Header(kServerHandshake, 10))), IsOk());
  ASSERT_THAT(guard.Check(Bytes(std::string(10, 'x'))), IsOk());
  std::string payload = DirectPayload(caf::make_message(caf::exit_msg{}));
  EXPECT_THAT(guard.Check(Bytes(Header(kDirectMessage, payload.size()))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(payload)), IsOk());
}

TEST(FrameGuardTest, Inbound_RoutedMessage_PermissionDenied) {
  FrameGuard guard(Limits(), /*inbound=*/true);
  EXPECT_THAT(guard.Check(Bytes(Header(kClientHandshake, 50))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(std::string(50, 'x'))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(Header(kRoutedMessage, 100))),
              StatusIs(Code::kPermissionDenied, HasSubstr("may only send as itself")));
}

TEST(FrameGuardTest, Outbound_RoutedMessageFromTheLeader_Passes) {
  FrameGuard guard(Limits(), /*inbound=*/false);
  EXPECT_THAT(guard.Check(Bytes(Header(kServerHandshake, 50))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(std::string(50, 'x'))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(Header(kRoutedMessage, 100))), IsOk());
}

TEST(FrameGuardTest, Inbound_HugeHandshake_ResourceExhaustedBeforePayload) {
  FrameGuard guard(Limits(), /*inbound=*/true);
  EXPECT_THAT(guard.Check(Bytes(Header(kClientHandshake, 0xFFFFFFF0u))),
              StatusIs(Code::kResourceExhausted, HasSubstr("a handshake of 4294967280 bytes")));
}

TEST(FrameGuardTest, Inbound_HandshakeWithoutPayload_InvalidArgument) {
  FrameGuard guard(Limits(), /*inbound=*/true);
  EXPECT_THAT(guard.Check(Bytes(Header(kClientHandshake, 0))),
              StatusIs(Code::kInvalidArgument, HasSubstr("handshake frame without payload")));
}

TEST(FrameGuardTest, Inbound_MessageBeforeHandshake_InvalidArgument) {
  for (uint8_t operation : {kServerHandshake, kDirectMessage, kHeartbeat}) {
    FrameGuard guard(Limits(), /*inbound=*/true);
    EXPECT_THAT(guard.Check(Bytes(Header(operation, operation == kHeartbeat ? 0 : 10))),
                StatusIs(Code::kInvalidArgument, HasSubstr("before the handshake")))
        << static_cast<int>(operation);
  }
}

TEST(FrameGuardTest, AfterHandshake_FrameOverLimit_ResourceExhaustedNamingTheLimit) {
  FrameGuard guard(Limits(), /*inbound=*/true);
  ASSERT_THAT(guard.Check(Bytes(Header(kClientHandshake, 10))), IsOk());
  ASSERT_THAT(guard.Check(Bytes(std::string(10, 'x'))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(Header(kDirectMessage, 1001))),
              StatusIs(Code::kResourceExhausted, HasSubstr("the limit is 1000")));
}

TEST(FrameGuardTest, UnknownOperationOrShortHeader_InvalidArgument) {
  FrameGuard guard(Limits(), /*inbound=*/true);
  EXPECT_THAT(guard.Check(Bytes(Header(7, 0))),
              StatusIs(Code::kInvalidArgument, HasSubstr("unknown frame operation 7")));
  FrameGuard other(Limits(), /*inbound=*/true);
  EXPECT_THAT(other.Check(Bytes(std::string(10, '\0'))),
              StatusIs(Code::kInvalidArgument, HasSubstr("a frame header of 10 bytes")));
}

TEST(FrameGuardTest, Outbound_ServerHandshakeFirstAndNoSizeLimitWhenZero) {
  WireLimits limits = Limits();
  limits.max_frame_bytes = 0;
  FrameGuard guard(limits, /*inbound=*/false);
  EXPECT_THAT(guard.Check(Bytes(Header(kClientHandshake, 10))),
              StatusIs(Code::kInvalidArgument, HasSubstr("before the handshake")));
  FrameGuard dialed(limits, /*inbound=*/false);
  ASSERT_THAT(dialed.Check(Bytes(Header(kServerHandshake, 500))), IsOk());
  ASSERT_THAT(dialed.Check(Bytes(std::string(500, 'x'))), IsOk());
  EXPECT_TRUE(dialed.handshake_done());
  EXPECT_THAT(dialed.Check(Bytes(Header(kDirectMessage, 100u << 20))), IsOk());
}

}  // namespace
}  // namespace muster
