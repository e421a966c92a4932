#include "muster/messages/direct/direct_frames.h"

#include <utility>

#include <absl/strings/str_cat.h>

#include "muster/messages/status/cut_text.h"

namespace muster {
namespace {

constexpr size_t kMaxErrorBytes = 16u << 10;

}  // namespace

std::string EncodeDirectFrame(const google::protobuf::MessageLite& message) {
  const size_t size = message.ByteSizeLong();
  std::string frame(kDirectHeaderBytes + size, '\0');
  for (size_t i = 0; i < kDirectHeaderBytes; ++i) {
    frame[i] = static_cast<char>((size >> (8 * (kDirectHeaderBytes - 1 - i))) & 0xff);
  }
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(frame.data()) +
                                          kDirectHeaderBytes);
  return frame;
}

uint32_t DirectFrameLength(absl::string_view header) {
  uint32_t length = 0;
  for (size_t i = 0; i < kDirectHeaderBytes && i < header.size(); ++i) {
    length = (length << 8) | static_cast<uint8_t>(header[i]);
  }
  return length;
}

void SetDirectCall(proto::DirectRequest& out, proto::InsertKeyValueRequest request) {
  *out.mutable_insert_key_value() = std::move(request);
}
void SetDirectCall(proto::DirectRequest& out, proto::GetKeyValueRequest request) {
  *out.mutable_get_key_value() = std::move(request);
}
void SetDirectCall(proto::DirectRequest& out, proto::TryGetKeyValueRequest request) {
  *out.mutable_try_get_key_value() = std::move(request);
}
void SetDirectCall(proto::DirectRequest& out, proto::IncrementKeyValueRequest request) {
  *out.mutable_increment_key_value() = std::move(request);
}
void SetDirectCall(proto::DirectRequest& out, proto::CompareAndSwapRequest request) {
  *out.mutable_compare_and_swap() = std::move(request);
}
void SetDirectCall(proto::DirectRequest& out, proto::DeleteKeyValueRequest request) {
  *out.mutable_delete_key_value() = std::move(request);
}
void SetDirectCall(proto::DirectRequest& out, proto::GetKeyValueDirRequest request) {
  *out.mutable_get_key_value_dir() = std::move(request);
}

namespace {

template <class Response>
absl::StatusOr<Response> Take(proto::DirectResponse& response,
                              proto::DirectResponse::ReplyCase expected,
                              Response* (proto::DirectResponse::*mutable_reply)()) {
  if (absl::Status status = DirectStatus(response); !status.ok()) return status;
  if (response.reply_case() != expected) {
    return absl::InternalError(absl::StrCat("the leader's direct endpoint answered case ",
                                            response.reply_case(), " to a call of case ",
                                            expected));
  }
  return std::move(*(response.*mutable_reply)());
}

}  // namespace

#define MUSTER_DIRECT_REPLY(Type, kCase, field)                                                \
  template <>                                                                                  \
  absl::StatusOr<proto::Type> TakeDirectReply<proto::Type>(proto::DirectResponse & response) { \
    return Take<proto::Type>(response, proto::DirectResponse::kCase,                           \
                             &proto::DirectResponse::mutable_##field);                         \
  }                                                                                            \
  proto::DirectResponse DirectReply(proto::Type reply) {                                       \
    proto::DirectResponse response;                                                            \
    *response.mutable_##field() = std::move(reply);                                            \
    return response;                                                                           \
  }
MUSTER_DIRECT_REPLY(AuthenticateResponse, kAuthenticate, authenticate)
MUSTER_DIRECT_REPLY(InsertKeyValueResponse, kInsertKeyValue, insert_key_value)
MUSTER_DIRECT_REPLY(GetKeyValueResponse, kGetKeyValue, get_key_value)
MUSTER_DIRECT_REPLY(TryGetKeyValueResponse, kTryGetKeyValue, try_get_key_value)
MUSTER_DIRECT_REPLY(IncrementKeyValueResponse, kIncrementKeyValue, increment_key_value)
MUSTER_DIRECT_REPLY(CompareAndSwapResponse, kCompareAndSwap, compare_and_swap)
MUSTER_DIRECT_REPLY(DeleteKeyValueResponse, kDeleteKeyValue, delete_key_value)
MUSTER_DIRECT_REPLY(GetKeyValueDirResponse, kGetKeyValueDir, get_key_value_dir)
#undef MUSTER_DIRECT_REPLY

absl::Status DirectStatus(const proto::DirectResponse& response) {
  if (response.code() == 0) return absl::OkStatus();
  int code = response.code();
  if (code < 1 || code > 16) code = static_cast<int>(absl::StatusCode::kUnknown);
  return absl::Status(static_cast<absl::StatusCode>(code), response.message());
}

proto::DirectResponse DirectError(const absl::Status& status) {
  proto::DirectResponse response;
  response.set_code(static_cast<int32_t>(status.code()));
  response.set_message(CutText(status.message(), kMaxErrorBytes));
  return response;
}

bool IsDirectCall(const proto::DirectRequest& request) {
  switch (request.call_case()) {
    case proto::DirectRequest::kInsertKeyValue:
      return !request.insert_key_value().ephemeral();
    case proto::DirectRequest::kCompareAndSwap:
      return !request.compare_and_swap().ephemeral();
    case proto::DirectRequest::kGetKeyValue:
    case proto::DirectRequest::kTryGetKeyValue:
    case proto::DirectRequest::kIncrementKeyValue:
    case proto::DirectRequest::kDeleteKeyValue:
    case proto::DirectRequest::kGetKeyValueDir:
      return true;
    default:
      return false;
  }
}

}  // namespace muster
