#include "muster/net/transport/frame_guard.h"

#include <absl/strings/str_cat.h>

namespace muster {
namespace {

// BASP operations (caf/io/basp/message_type.hpp).
constexpr uint8_t kServerHandshake = 0x00;
constexpr uint8_t kClientHandshake = 0x01;
constexpr uint8_t kRoutedMessage = 0x03;
constexpr uint8_t kLastOperation = 0x06;  // heartbeat

uint32_t PayloadLength(absl::Span<const char> header) {
  auto byte = [&](int i) { return static_cast<uint32_t>(static_cast<uint8_t>(header[i])); };
  return byte(4) << 24 | byte(5) << 16 | byte(6) << 8 | byte(7);
}

}  // namespace

absl::Status FrameGuard::Check(absl::Span<const char> chunk) {
  if (!in_payload_) return CheckHeader(chunk);
  in_payload_ = false;
  uint8_t expected_handshake = inbound_ ? kClientHandshake : kServerHandshake;
  if (payload_operation_ == expected_handshake) handshake_done_ = true;
  return absl::OkStatus();
}

absl::Status FrameGuard::CheckHeader(absl::Span<const char> header) {
  if (header.size() != kHeaderSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("a frame header of ", header.size(), " bytes; expected ", kHeaderSize));
  }
  const uint8_t operation = static_cast<uint8_t>(header[0]);
  const uint32_t length = PayloadLength(header);
  if (operation > kLastOperation) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown frame operation ", static_cast<int>(operation)));
  }
  // A routed message names its source node in its payload, and CAF takes that node at its word
  // (a source on this node is looked up in the local registry): a peer could send as any actor.
  // Muster's nodes talk to each other directly, so a peer that connected to us may only send
  // as itself (direct messages, whose source node is the connection's).
  if (inbound_ && operation == kRoutedMessage) {
    return absl::PermissionDeniedError(
        "a routed message (a sender on another node than the peer's): a peer may only send as "
        "itself");
  }
  const bool handshake = operation == kServerHandshake || operation == kClientHandshake;
  if (handshake && length == 0) {
    return absl::InvalidArgumentError("a handshake frame without payload");
  }
  if (!handshake_done_) {
    uint8_t expected = inbound_ ? kClientHandshake : kServerHandshake;
    if (operation != expected) {
      return absl::InvalidArgumentError(
          absl::StrCat("frame operation ", static_cast<int>(operation), " before the handshake"));
    }
    if (inbound_ && length > limits_.max_handshake_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "a handshake of ", length, " bytes; the limit is ", limits_.max_handshake_bytes));
    }
  }
  if (limits_.max_frame_bytes != 0 && length > limits_.max_frame_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("a frame of ", length, " bytes; the limit is ",
                                                     limits_.max_frame_bytes,
                                                     " (--max-frame-size)"));
  }
  if (length > 0) {
    in_payload_ = true;
    payload_operation_ = operation;
  }
  return absl::OkStatus();
}

}  // namespace muster
