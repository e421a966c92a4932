#include "muster/net/agent/session/etcd/etcd_gateway_post.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include <absl/strings/escaping.h>
#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

namespace muster {

std::pair<std::string, int> GatewayHostPort(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  int port = 0;
  (void)absl::SimpleAtoi(endpoint.substr(colon + 1), &port);
  std::string host = endpoint.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // [IPv6]
  }
  return {host, port};
}

std::unique_ptr<httplib::ClientImpl> NewGatewayClient(const std::string& endpoint,
                                                      const EtcdSecurity& security) {
  auto [host, port] = GatewayHostPort(endpoint);
  std::unique_ptr<httplib::ClientImpl> client;
  if (security.tls) {
    // (An SSLClient made directly: httplib's Client parses "https://[IPv6]:port" with a pattern
    // that misses hex digits.)
    client =
        std::make_unique<httplib::SSLClient>(host, port, security.cert_file, security.key_file);
    if (!security.ca_file.empty()) client->set_ca_cert_path(security.ca_file);
    client->enable_server_certificate_verification(true);
  } else {
    client = std::make_unique<httplib::ClientImpl>(host, port);
  }
  client->set_keep_alive(true);
  client->set_decompress(false);
  // Headers and body go in two writes: without it, Nagle's algorithm holds the body back until
  // the server's delayed ACK (40 ms a request).
  client->set_tcp_nodelay(true);
  return client;
}

absl::StatusOr<GatewayReply> PostToGateway(httplib::ClientImpl& client, const char* path,
                                           const std::string& body, absl::Time deadline,
                                           size_t max_bytes, const std::string& token) {
  if (!client.is_valid()) {
    return absl::InvalidArgumentError(
        "etcd's client certificate and key (MUSTER_ETCD_CERT, MUSTER_ETCD_KEY) do not load: "
        "each must be PEM, the key unencrypted and the certificate's");
  }
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("no time left");
  const auto bound = std::max(absl::ToChronoMicroseconds(left), std::chrono::microseconds(1000));
  client.set_connection_timeout(bound);
  client.set_read_timeout(bound);
  client.set_write_timeout(bound);
  httplib::Request request;
  request.method = "POST";
  request.path = path;
  request.body = body;
  request.set_header("Content-Type", "application/json");
  if (!token.empty()) request.set_header("Authorization", token);
  GatewayReply reply;
  bool too_long = false;
  bool too_late = false;
  request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    too_long = reply.body.size() + size > max_bytes;
    too_late = absl::Now() > deadline;
    if (too_long || too_late) return false;
    reply.body.append(data, size);
    return true;
  };
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  const bool sent = client.send(request, response, error);
  reply.status = response.status;
  if (sent && response.status == 400 && absl::StrContains(reply.body, "CommonName of client")) {
    return absl::FailedPreconditionError(
        "etcd refuses a request through its JSON gateway from a client certificate with a "
        "CommonName while its authentication is on: give a certificate without a CN "
        "(MUSTER_ETCD_CERT), or reach etcd over gRPC");
  }
  if (sent || (error == httplib::Error::Read && response.status >= 400 && !reply.body.empty() &&
               !too_long && !too_late)) {
    return reply;
  }
  if (too_long) {
    return absl::UnavailableError(
        absl::StrCat(path, ": the reply was longer than ", max_bytes, " bytes"));
  }
  if (too_late || absl::Now() >= deadline) {
    return absl::DeadlineExceededError(
        absl::StrCat(path, ": no whole reply within ", absl::FormatDuration(left)));
  }
  if (error == httplib::Error::SSLServerVerification) {
    return absl::UnavailableError(absl::StrCat(
        path, ": ", httplib::to_string(error),
        " (is the member's certificate signed by the CA of MUSTER_ETCD_CACERT, and does it name "
        "the host or address the endpoint gives?)"));
  }
  if (error == httplib::Error::SSLConnection) {
    return absl::UnavailableError(
        absl::StrCat(path, ": ", httplib::to_string(error),
                     " (does the member speak TLS, and does it accept this client's certificate, "
                     "MUSTER_ETCD_CERT?)"));
  }
  return absl::UnavailableError(absl::StrCat(path, ": ", httplib::to_string(error)));
}

absl::StatusOr<std::string> EtcdGatewayAuthenticate(httplib::ClientImpl& client,
                                                    const EtcdSecurity& security,
                                                    absl::Time deadline) {
  google::protobuf::Struct request;
  (*request.mutable_fields())["name"].set_string_value(security.user);
  (*request.mutable_fields())["password"].set_string_value(security.password);
  std::string body;
  if (!google::protobuf::util::MessageToJsonString(request, &body).ok()) {
    return absl::InternalError("cannot write the authentication request as JSON");
  }
  absl::StatusOr<GatewayReply> reply =
      PostToGateway(client, "/v3/auth/authenticate", body, deadline, 64 << 10);
  if (!reply.ok()) return reply.status();
  google::protobuf::Struct parsed;
  const bool json = google::protobuf::util::JsonStringToMessage(reply->body, &parsed).ok();
  const auto& fields = parsed.fields();
  if (reply->status == 200 && json) {
    auto token = fields.find("token");
    if (token != fields.end() && !token->second.string_value().empty()) {
      if (absl::Status bad = CheckEtcdToken(token->second.string_value()); !bad.ok()) return bad;
      return token->second.string_value();
    }
  }
  std::string message = reply->body;
  if (json) {
    if (auto text = fields.find("message"); text != fields.end()) {
      message = text->second.string_value();
    }
  }
  message = absl::CHexEscape(message.substr(0, 200));
  if (reply->status >= 500 || reply->status == 0 || reply->status == 429) {
    return absl::UnavailableError(
        absl::StrCat("etcd's authentication: HTTP ", reply->status, ": ", message));
  }
  if (absl::StrContains(message, "not enabled")) {
    return absl::FailedPreconditionError(
        absl::StrCat("etcd's authentication is not enabled (", message,
                     "): unset MUSTER_ETCD_USER, or enable it (etcdctl auth enable)"));
  }
  if (!absl::StrContains(message, "authentication failed") &&
      !absl::StrContains(message, "user name")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "etcd's authentication answered HTTP ", reply->status, " (", message,
        "): is it etcd 3.4 or later, with its gRPC gateway on (--enable-grpc-gateway)?"));
  }
  return EtcdUserRefusedError(security.user, message);
}

}  // namespace muster
