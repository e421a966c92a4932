#include "muster/net/observe/http_endpoint.h"

#include <sys/socket.h>

#include <chrono>
#include <utility>

#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <absl/strings/strip.h>
#include <caf/scoped_actor.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/net/leader/auth/token_gate_actor.h"
#include "muster/net/observe/httplib.h"
#include "muster/net/observe/live_page.h"
#include "muster/net/observe/page_state.h"
#include "muster/net/observe/prometheus_text.h"

namespace muster {
namespace {

constexpr const char* kJson = "application/json";

// The token a request presents: `Authorization: Bearer TOKEN`, or the cookie muster_token.
std::string PresentedToken(const httplib::Request& request) {
  std::string authorization = request.get_header_value("Authorization");
  absl::string_view bearer = absl::StripAsciiWhitespace(authorization);
  if (absl::StartsWithIgnoreCase(bearer, "bearer ")) {  // the scheme is case-insensitive
    return std::string(absl::StripAsciiWhitespace(bearer.substr(7)));
  }
  for (absl::string_view cookie : absl::StrSplit(request.get_header_value("Cookie"), ';')) {
    cookie = absl::StripAsciiWhitespace(cookie);
    if (absl::ConsumePrefix(&cookie, "muster_token=")) return std::string(cookie);
  }
  return "";
}

void JsonError(httplib::Response& response, int status, absl::string_view message) {
  response.status = status;
  response.set_content(absl::StrCat("{\"error\":", JsonString(message), "}\n"), kJson);
}

}  // namespace

absl::StatusOr<HttpOptions> ParseHttpAddress(absl::string_view text) {
  size_t colon = text.rfind(':');
  int port = -1;
  if (colon != absl::string_view::npos && colon > 0 &&
      absl::SimpleAtoi(text.substr(colon + 1), &port) && port >= 0 && port <= 65535) {
    absl::string_view host = text.substr(0, colon);
    // An IPv6 address in brackets ("[::1]:9400"); an unclosed bracket is no host.
    bool bracketed = absl::ConsumePrefix(&host, "[");
    if (!host.empty() && (!bracketed || absl::ConsumeSuffix(&host, "]")) && !host.empty()) {
      HttpOptions options;
      options.host = std::string(host);
      options.port = static_cast<uint16_t>(port);
      return options;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--http ", text,
                   " is not HOST:PORT (e.g. 127.0.0.1:9400, 0.0.0.0:9400, or port 0 for any "
                   "free port)"));
}

absl::StatusOr<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(
    caf::actor_system& system, JobObserverActor observer,
    std::shared_ptr<const LeaderMetrics> metrics, std::string leader_address, HttpOptions options) {
  if (options.tls.enabled()) {
    if (absl::Status usable = CheckTlsFiles(options.tls); !usable.ok()) return usable;
  }
  std::unique_ptr<HttpEndpoint> endpoint(new HttpEndpoint(
      system, std::move(observer), std::move(metrics), std::move(leader_address), options));
  httplib::Server& server = *endpoint->server_;
  if (!server.is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the HTTP endpoint cannot use the TLS files ", options.tls.cert, ", ", options.tls.key,
        " and ", options.tls.ca, "; check them with `openssl verify -CAfile CA CERT`"));
  }
  std::string host = options.host.empty() ? "0.0.0.0" : options.host;
  int port = options.port == 0 ? server.bind_to_any_port(host)
                               : (server.bind_to_port(host, options.port) ? options.port : -1);
  if (port <= 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve HTTP on ", host, ":", options.port,
        ": the address is in use or not this host's; choose another --http HOST:PORT"));
  }
  endpoint->port_ = static_cast<uint16_t>(port);
  HttpEndpoint* raw = endpoint.get();
  endpoint->thread_ = std::thread([raw] {
    raw->server_->listen_after_bind();
    raw->listening_done_ = true;
  });
  // Until its thread is in the accept loop the server cannot be stopped (stop() does nothing
  // before): wait for that here, so that Stop() right after Start() never misses.
  while (!server.is_running() && !raw->listening_done_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return endpoint;
}

HttpEndpoint::HttpEndpoint(caf::actor_system& system, JobObserverActor observer,
                           std::shared_ptr<const LeaderMetrics> metrics, std::string leader_address,
                           HttpOptions options)
    : system_(system),
      observer_(std::move(observer)),
      metrics_(std::move(metrics)),
      leader_address_(std::move(leader_address)),
      options_(std::move(options)) {
  if (options_.threads < 2) options_.threads = 2;
  if (options_.tls.enabled()) {
    server_ = std::make_unique<httplib::SSLServer>(
        options_.tls.cert.c_str(), options_.tls.key.c_str(), options_.tls.ca.c_str());
  } else {
    server_ = std::make_unique<httplib::Server>();
  }
  int threads = options_.threads;
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // A connection holds its thread while it is kept alive: give the thread back after a second
  // without a request (Prometheus comes every 15 s anyway), and bound the wait for a request.
  server_->set_keep_alive_max_count(100);
  server_->set_keep_alive_timeout(1);
  server_->set_read_timeout(std::chrono::seconds(5));
  server_->set_payload_max_length(64 << 10);
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, with which a second leader given
  // the same --http port would bind it too and take half of the requests.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  Route();
}

HttpEndpoint::~HttpEndpoint() { Stop(); }

void HttpEndpoint::Stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string HttpEndpoint::url() const {
  std::string host =
      options_.host.empty() || options_.host == "0.0.0.0" ? "127.0.0.1" : options_.host;
  if (absl::StrContains(host, ':')) host = absl::StrCat("[", host, "]");
  return absl::StrCat(options_.tls.enabled() ? "https://" : "http://", host, ":", port_);
}

absl::StatusOr<JobSnapshotPtr> HttpEndpoint::Snapshot() {
  caf::scoped_actor self{system_};
  absl::StatusOr<JobSnapshotPtr> result = absl::UnavailableError("no snapshot");
  auto timeout = std::chrono::milliseconds(absl::ToInt64Milliseconds(options_.snapshot_timeout));
  self->request(observer_, timeout, snapshot_atom::value)
      .receive([&](JobSnapshotPtr& snapshot) { result = std::move(snapshot); },
               [&](caf::error& error) { result = ToStatus(error); });
  return result;
}

bool HttpEndpoint::WaitForNextEvent(absl::Duration interval) {
  std::unique_lock<std::mutex> lock(stop_mutex_);
  stop_cv_.wait_for(lock, absl::ToChronoMilliseconds(interval), [this] { return stopping_; });
  return !stopping_;
}

void HttpEndpoint::Route() {
  // Every request presents the job's token when the leader has one.
  server_->set_pre_routing_handler(
      [this](const httplib::Request& request, httplib::Response& response) {
        if (options_.token.empty() || TokensEqual(PresentedToken(request), options_.token)) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        if (request.path == "/") return httplib::Server::HandlerResponse::Unhandled;  // asks for it
        JsonError(response, 401,
                  "this Muster leader requires the job token: send `Authorization: Bearer TOKEN` "
                  "(the file of the leader's --token-file) or the cookie muster_token");
        response.set_header("WWW-Authenticate", "Bearer");
        return httplib::Server::HandlerResponse::Handled;
      });
  auto with_snapshot = [this](httplib::Response& response, auto render) {
    absl::StatusOr<JobSnapshotPtr> snapshot = Snapshot();
    if (!snapshot.ok()) {
      return JsonError(response, 503,
                       absl::StrCat("the leader did not answer: ", snapshot.status().ToString()));
    }
    render(**snapshot);
  };
  server_->Get("/metrics",
               [this, with_snapshot](const httplib::Request&, httplib::Response& response) {
                 with_snapshot(response, [&](const proto::JobSnapshot& snapshot) {
                   response.set_content(
                       RenderPrometheus(snapshot, *metrics_, GuardedMultiplexer::Stats(system_)),
                       "text/plain; version=0.0.4; charset=utf-8");
                 });
               });
  server_->Get("/api/state",
               [this, with_snapshot](const httplib::Request&, httplib::Response& response) {
                 with_snapshot(response, [&](const proto::JobSnapshot& snapshot) {
                   response.set_content(RenderPageState(snapshot, leader_address_), kJson);
                   response.set_header("Cache-Control", "no-store");
                 });
               });
  server_->Get("/", [](const httplib::Request&, httplib::Response& response) {
    absl::string_view page = LivePageHtml();
    response.set_content(page.data(), page.size(), "text/html; charset=utf-8");
    response.set_header("Cache-Control", "no-store");
  });
  server_->Get("/api/stream", [this](const httplib::Request&, httplib::Response& response) {
    if (streams_.fetch_add(1) >= options_.threads - 1) {
      streams_.fetch_sub(1);
      return JsonError(response, 503,
                       "too many live pages are open on this leader; close one, or poll "
                       "/api/state");
    }
    response.set_header("Cache-Control", "no-store");
    response.set_chunked_content_provider(
        "text/event-stream",
        [this, first = true](size_t, httplib::DataSink& sink) mutable {
          if (!first && !WaitForNextEvent(options_.stream_interval)) return false;
          first = false;
          absl::StatusOr<JobSnapshotPtr> snapshot = Snapshot();
          std::string event =
              snapshot.ok() ? absl::StrCat("event: state\ndata: ",
                                           RenderPageState(**snapshot, leader_address_), "\n\n")
                            : absl::StrCat("event: unavailable\ndata: ",
                                           JsonString(snapshot.status().ToString()), "\n\n");
          return sink.is_writable() && sink.write(event.data(), event.size());
        },
        [this](bool) { streams_.fetch_sub(1); });
  });
}

}  // namespace muster
