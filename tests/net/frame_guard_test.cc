#include "muster/net/transport/frame_guard.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

std::string Header(uint8_t operation, uint32_t length) {
  return ::muster::testing::BaspHeader(operation, length);
}

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
  EXPECT_THAT(guard.Check(Bytes(Header(kDirectMessage, 1000))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(std::string(1000, 'y'))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(Header(kHeartbeat, 0))), IsOk());
  EXPECT_THAT(guard.Check(Bytes(Header(kDirectMessage, 1))), IsOk());
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
