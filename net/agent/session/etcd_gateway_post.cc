#include "muster/net/agent/session/etcd_gateway_post.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>

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

std::unique_ptr<httplib::Client> NewGatewayClient(const std::string& endpoint) {
  auto [host, port] = GatewayHostPort(endpoint);
  auto client = std::make_unique<httplib::Client>(host, port);
  client->set_keep_alive(true);
  client->set_decompress(false);
  // Headers and body go in two writes: without it, Nagle's algorithm holds the body back until
  // the server's delayed ACK (40 ms a request).
  client->set_tcp_nodelay(true);
  return client;
}

absl::StatusOr<GatewayReply> PostToGateway(httplib::Client& client, const char* path,
                                           const std::string& body, absl::Time deadline,
                                           size_t max_bytes) {
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
  return absl::UnavailableError(absl::StrCat(path, ": ", httplib::to_string(error)));
}

}  // namespace muster
