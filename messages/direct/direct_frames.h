// Direct calls' frames and vocabulary (proto/direct_call.proto): a 4-byte big-endian length and
// one DirectRequest or DirectResponse; which oneof case carries each key-value request and its
// reply; a reply's status. Shared by the leader's direct endpoint and the agent's direct channel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>

#include "muster/proto/direct_call.pb.h"

namespace muster {

inline constexpr size_t kDirectHeaderBytes = 4;
// The largest frame an unauthenticated connection may announce (a token is at most 4 KiB).
inline constexpr uint32_t kDirectHandshakeBytes = 16u << 10;

// `message` as a frame: its length, then its bytes.
std::string EncodeDirectFrame(const google::protobuf::MessageLite& message);
// The length a frame's first kDirectHeaderBytes announce.
uint32_t DirectFrameLength(absl::string_view header);

// The request of a direct call for each key-value request type (an overload set), and the
// reply taken out of a response (its error, or Internal when it holds another case).
void SetDirectCall(proto::DirectRequest& out, proto::InsertKeyValueRequest request);
void SetDirectCall(proto::DirectRequest& out, proto::GetKeyValueRequest request);
void SetDirectCall(proto::DirectRequest& out, proto::TryGetKeyValueRequest request);
void SetDirectCall(proto::DirectRequest& out, proto::IncrementKeyValueRequest request);
void SetDirectCall(proto::DirectRequest& out, proto::CompareAndSwapRequest request);
void SetDirectCall(proto::DirectRequest& out, proto::DeleteKeyValueRequest request);
void SetDirectCall(proto::DirectRequest& out, proto::GetKeyValueDirRequest request);

template <class Response>
absl::StatusOr<Response> TakeDirectReply(proto::DirectResponse& response);
// The response that carries `reply` (one overload per reply type).
proto::DirectResponse DirectReply(proto::AuthenticateResponse reply);
proto::DirectResponse DirectReply(proto::InsertKeyValueResponse reply);
proto::DirectResponse DirectReply(proto::GetKeyValueResponse reply);
proto::DirectResponse DirectReply(proto::TryGetKeyValueResponse reply);
proto::DirectResponse DirectReply(proto::IncrementKeyValueResponse reply);
proto::DirectResponse DirectReply(proto::CompareAndSwapResponse reply);
proto::DirectResponse DirectReply(proto::DeleteKeyValueResponse reply);
proto::DirectResponse DirectReply(proto::GetKeyValueDirResponse reply);

// The status a response carries (OK when its code is 0). A code outside absl's becomes Unknown.
absl::Status DirectStatus(const proto::DirectResponse& response);
// A response that carries `status` (not OK) alone; its message is cut to 16 KiB.
proto::DirectResponse DirectError(const absl::Status& status);

// Whether a call may go direct: every key-value call of DirectRequest except ephemeral writes,
// which act as their task (they go through the agent, which names its task).
bool IsDirectCall(const proto::DirectRequest& request);

}  // namespace muster
