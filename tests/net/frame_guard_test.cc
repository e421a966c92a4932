#include "muster/net/transport/frame_guard.h"

#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/exit_reason.hpp>
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
  std::string info_reply = DirectPayload(caf::make_message(
      caf::ok_atom::value, std::string("info"), caf::strong_actor_ptr{}, std::string("x")));
  EXPECT_THAT(VerdictWithPublished(published, info_reply, 6), IsOk());
  // The same shape with other values (an attacker's text for an actor to print, or to keep).
  for (const caf::message& other : {caf::make_message(caf::get_atom::value, std::string("info"),
                                                      caf::strong_actor_ptr{}, std::string("x")),
                                    caf::make_message(caf::ok_atom::value, std::string("infox"),
                                                      caf::strong_actor_ptr{}, std::string("x"))}) {
    EXPECT_THAT(VerdictWithPublished(published, DirectPayload(other), 6),
                StatusIs(Code::kPermissionDenied, HasSubstr("did not publish")))
        << caf::to_string(other);
  }
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

TEST(PublishedActorsTest, AnyActorUntilOneIsAddedThenOnlyThoseUpToTheCapacity) {
  PublishedActors published;
  EXPECT_TRUE(published.MayReceive(9));
  for (uint64_t id = 1; id <= PublishedActors::kCapacity; ++id) EXPECT_TRUE(published.Add(id));
  EXPECT_FALSE(published.Add(1000));
  EXPECT_TRUE(published.MayReceive(1));
  EXPECT_TRUE(published.MayReceive(PublishedActors::kCapacity));
  EXPECT_FALSE(published.MayReceive(1000));
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
