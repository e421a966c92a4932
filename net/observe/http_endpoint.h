// The leader's HTTP endpoint (muster serve --http HOST:PORT):
//   GET /metrics      Prometheus text (net/observe/prometheus_text.h)
//   GET /             the live page (net/observe/page/index.html, carried in the binary)
//   GET /api/state    the job as one JSON object (net/observe/page_state.h)
//   GET /api/stream   server-sent events: that JSON as an `event: state` every stream_interval
// It runs cpp-httplib's server on threads of its own. Each request asks the job observer
// (actors/observe/job_observer_actor.h) for a snapshot and waits for it on its own thread:
// requests within the observer's max_age share one snapshot, and no actor ever waits for HTTP.
// Security is the leader port's: with a job token every request presents it (header
// `Authorization: Bearer TOKEN`, or the cookie `muster_token`; otherwise 401), and with TLS
// files the endpoint speaks HTTPS and accepts only clients with a certificate of the job's CA.
// Live pages hold a thread each: at most `threads - 1` streams at once (503 beyond), and a kept
// alive connection gives its thread back after a second without a request, so a scrape finds a
// thread unless as many clients as threads send requests at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <absl/status/statusor.h>
#include <absl/time/time.h>
#include <caf/actor_system.hpp>

#include "muster/actors/observe/job_observer_actor.h"
#include "muster/actors/observe/leader_metrics.h"
#include "muster/net/transport/tls/tls_context.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace muster {

struct HttpOptions {
  std::string host = "127.0.0.1";  // "0.0.0.0": every interface
  uint16_t port = 0;               // 0: any free port (port() says which)
  std::string token;               // non-empty: every request presents it
  TlsFiles tls;                    // all set: HTTPS with client certificates
  int threads = 8;                 // pages hold one each while open (at most threads - 1)
  absl::Duration stream_interval = absl::Seconds(1);
  absl::Duration snapshot_timeout = absl::Seconds(5);
  // The leader's address as the page shows it (empty: the leader's own; an HA leader's is the
  // address it advertises, its coordinator not being published on a port of its own).
  std::string leader_address;
};

// Parses `--http HOST:PORT` (port 0: any free port) into options with that host and port.
// Possible errors: InvalidArgument naming the text and the expected form.
absl::StatusOr<HttpOptions> ParseHttpAddress(absl::string_view text);

class HttpEndpoint {
 public:
  // Binds HOST:PORT and serves until Stop(). `leader_address` is shown on the page.
  // Possible errors: Unavailable (the address cannot be bound, naming it), InvalidArgument
  // (unusable TLS files).
  static absl::StatusOr<std::unique_ptr<HttpEndpoint>> Start(
      caf::actor_system& system, JobObserverActor observer,
      std::shared_ptr<const LeaderMetrics> metrics, std::string leader_address,
      HttpOptions options);
  // Stop().
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  // Ends open streams, closes the port and joins the server's threads. Idempotent.
  void Stop();

  uint16_t port() const { return port_; }
  // "http://HOST:PORT" or "https://HOST:PORT" ("[HOST]" for an IPv6 address).
  std::string url() const;

 private:
  HttpEndpoint(caf::actor_system& system, JobObserverActor observer,
               std::shared_ptr<const LeaderMetrics> metrics, std::string leader_address,
               HttpOptions options);
  void Route();
  absl::StatusOr<JobSnapshotPtr> Snapshot();
  // Waits up to `interval` or until Stop(); false once stopping.
  bool WaitForNextEvent(absl::Duration interval);

  caf::actor_system& system_;
  JobObserverActor observer_;
  std::shared_ptr<const LeaderMetrics> metrics_;
  std::string leader_address_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  uint16_t port_ = 0;
  std::atomic<int> streams_{0};
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;                    // guarded by stop_mutex_
  std::atomic<bool> listening_done_{false};  // the server's thread left its accept loop
};

}  // namespace muster
