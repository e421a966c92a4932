#include "muster/net/ha/etcd/etcd_gateway_member.h"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include <absl/strings/escaping.h>
#include <absl/strings/str_cat.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "muster/net/agent/session/etcd/etcd_gateway_post.h"

namespace muster {
namespace {

// A reply larger than this is not etcd's (a page of the state is at most a few MiB).
constexpr size_t kMaxReplyBytes = 64 << 20;

const char* PathOf(EtcdMethod method) {
  switch (method) {
    case EtcdMethod::kRange:
      return "/v3/kv/range";
    case EtcdMethod::kTxn:
      return "/v3/kv/txn";
    case EtcdMethod::kLeaseGrant:
      return "/v3/lease/grant";
    case EtcdMethod::kLeaseKeepAlive:
      return "/v3/lease/keepalive";
    case EtcdMethod::kLeaseRevoke:
      return "/v3/lease/revoke";
    case EtcdMethod::kAuthenticate:
      return "/v3/auth/authenticate";
  }
  return "/";
}

std::string Excerpt(const std::string& text) { return absl::CHexEscape(text.substr(0, 200)); }

// etcd's error reply, {"error": ..., "code": N, "message": ...} (a stream's: {"grpc_code": N,
// "message": ...}), as a status of code N; an HTTP error without one: Unavailable (5xx and 429:
// the member), FailedPrecondition (other 4xx: not a gateway).
absl::Status ErrorOf(int http_status, const std::string& body) {
  google::protobuf::Struct parsed;
  if (google::protobuf::util::JsonStringToMessage(body, &parsed).ok()) {
    const auto& fields = parsed.fields();
    auto code = fields.find("code");
    if (code == fields.end()) code = fields.find("grpc_code");
    auto message = fields.find("message");
    if (code != fields.end() && code->second.number_value() >= 1 &&
        code->second.number_value() <= 16) {
      return absl::Status(
          static_cast<absl::StatusCode>(code->second.number_value()),
          message != fields.end() ? Excerpt(message->second.string_value()) : Excerpt(body));
    }
  }
  if (http_status >= 400 && http_status < 500 && http_status != 429) {  // 429: a member behind
    return absl::FailedPreconditionError(absl::StrCat(
        "HTTP ", http_status, " (", Excerpt(body),
        "): is it etcd 3.4 or later, with its gRPC gateway on (--enable-grpc-gateway)?"));
  }
  return absl::UnavailableError(absl::StrCat("HTTP ", http_status, ": ", Excerpt(body)));
}

class GatewayMember : public EtcdMember {
 public:
  // Idle connections kept for the next calls (several threads call at once).
  static constexpr size_t kMaxIdle = 4;

  GatewayMember(const std::string& endpoint, const EtcdSecurity& security)
      : endpoint_(endpoint), security_(security) {}

  absl::Status Call(EtcdMethod method, const google::protobuf::Message& request,
                    google::protobuf::Message* response, absl::Time deadline,
                    const std::string& token) const override {
    response->Clear();
    google::protobuf::util::JsonPrintOptions print;
    print.preserve_proto_field_names = true;
    std::string json;
    if (!google::protobuf::util::MessageToJsonString(request, &json, print).ok()) {
      return absl::InternalError("cannot write the request as JSON");
    }
    std::string received;
    int http_status = 0;
    if (absl::Status sent = Post(PathOf(method), json, deadline, token, &received, &http_status);
        !sent.ok()) {
      return sent;
    }
    if (http_status != 200) return ErrorOf(http_status, received);
    google::protobuf::util::JsonParseOptions parse;
    parse.ignore_unknown_fields = true;
    if (method == EtcdMethod::kLeaseKeepAlive) {
      // A stream's answers come as {"result": ...} (or {"error": ...}).
      google::protobuf::Struct wrapper;
      if (!google::protobuf::util::JsonStringToMessage(received, &wrapper).ok()) {
        return absl::UnavailableError(absl::StrCat("not etcd's answer: ", Excerpt(received)));
      }
      auto result = wrapper.fields().find("result");
      if (result == wrapper.fields().end()) {
        auto error = wrapper.fields().find("error");
        if (error == wrapper.fields().end()) return absl::UnavailableError("stream closed");
        std::string text;
        (void)google::protobuf::util::MessageToJsonString(error->second, &text);
        return ErrorOf(500, text);
      }
      std::string answer;  // (MessageToJsonString appends)
      if (!google::protobuf::util::MessageToJsonString(result->second, &answer).ok()) {
        return absl::UnavailableError("not etcd's answer");
      }
      received = std::move(answer);
    }
    if (!google::protobuf::util::JsonStringToMessage(received, response, parse).ok()) {
      return absl::UnavailableError(absl::StrCat("not etcd's answer: ", Excerpt(received)));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Post(const char* path, const std::string& body, absl::Time deadline,
                    const std::string& token, std::string* received, int* http_status) const {
    std::unique_ptr<httplib::ClientImpl> client = Take();
    absl::StatusOr<GatewayReply> reply =
        PostToGateway(*client, path, body, deadline, kMaxReplyBytes, token);
    if (!reply.ok()) return reply.status();  // the connection is dropped with the client
    Give(std::move(client));
    *http_status = reply->status;
    *received = std::move(reply->body);
    return absl::OkStatus();
  }

  std::unique_ptr<httplib::ClientImpl> Take() const {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!idle_.empty()) {
        std::unique_ptr<httplib::ClientImpl> client = std::move(idle_.back());
        idle_.pop_back();
        return client;
      }
    }
    return NewGatewayClient(endpoint_, security_);
  }
  void Give(std::unique_ptr<httplib::ClientImpl> client) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (idle_.size() < kMaxIdle) idle_.push_back(std::move(client));
  }

  const std::string endpoint_;
  const EtcdSecurity security_;  // the password too: a gateway member authenticates per token
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<httplib::ClientImpl>> idle_;
};

}  // namespace

std::unique_ptr<EtcdMember> NewEtcdGatewayMember(const std::string& endpoint,
                                                 const EtcdSecurity& security) {
  return std::make_unique<GatewayMember>(endpoint, security);
}

}  // namespace muster
