// A leader in this process: the coordinator actor, published on a TCP port, stopped on
// destruction. What `muster serve`, the examples and the tests run; embed it to host the
// coordination service inside your own program:
//
//   muster::NodeConfig config;
//   caf::actor_system system{config};
//   auto leader = muster::Leader::Start(system, options, {.host = "0.0.0.0", .port = 7400});
//   if (!leader.ok()) return Fail(leader.status());
//   ... (*leader)->address() ...   // give it to the workers
//   (*leader)->Stop();             // or let the destructor do it
//
// One actor system cannot host both the leader and workers that reach it over TCP (CAF
// shortcuts a node's connection to itself): run workers in their own actor system (a second
// caf::actor_system in the same process works), or give an in-process agent the coordinator
// directly (AgentOptions::local_leader = leader->coordinator()).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <absl/status/statusor.h>
#include <absl/time/time.h>
#include <caf/actor_system.hpp>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/actors/observe/leader_metrics.h"
#include "muster/net/observe/http_endpoint.h"

namespace muster {

class DirectEndpoint;
class StateStore;

struct LeaderEndpoint {
  // The address to listen on: "0.0.0.0" (or "") listens on every interface.
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port; port() says which
  // Non-empty: the job token every other node must present before any request (a token gate
  // is published in front of the coordinator; see net/leader/auth/token_gate_actor.h). Never
  // logged.
  std::string token;
  // Set: the HTTP endpoint (metrics, the live page; net/observe/http_endpoint.h) on its host and
  // port. It takes the token above and the node's TLS files, so it admits whom the port admits.
  std::optional<HttpOptions> http;
  // false: the coordinator is not published on a port of its own; published() is what to put
  // behind one (an HA leader's front publishes it; net/ha/ha_leader.h). port() is then 0.
  bool publish = true;
  // Direct key-value calls (net/leader/direct/direct_endpoint.h, docs/protocol.md): agents
  // make them on their calling threads over a port of their own, on `host`. Offered only by a
  // leader published on a port of its own, without TLS (a worker then keeps every call on its
  // TLS connection). 0: any free port (direct_port() says which).
  bool direct_calls = true;
  uint16_t direct_port = 0;
};

class Leader {
 public:
  // Spawns the coordinator in `system` (configured with NodeConfig / ConfigureNode) and
  // publishes it. options.incarnation 0 draws a random one. With options.state_dir the leader
  // opens (or creates) that dir, recovers what a previous leader recorded there (keeping its
  // incarnation) and records every change before acknowledging it (docs/operations.md). The
  // leader keeps the job's last 4096 events (WatchEvents, `muster events`); with
  // options.events_file it also appends each as a JSON line to that file.
  // Possible errors: Unavailable (the port cannot be opened, naming host, port and cause);
  // with a state dir also FailedPrecondition (locked by another leader, another format),
  // DataLoss (damaged files) and Internal (I/O), each naming the dir; with an event file the
  // errors of EventFile::Open (NotFound, PermissionDenied, ...), naming the file.
  // With `store` the leader keeps its state there (recovering what it holds, as from a state
  // dir) and options.state_dir is not used: an HA leader passes its etcd store.
  static absl::StatusOr<std::unique_ptr<Leader>> Start(caf::actor_system& system,
                                                       CoordinatorOptions options,
                                                       LeaderEndpoint endpoint = {},
                                                       std::shared_ptr<StateStore> store = nullptr);
  // Stop().
  ~Leader();
  Leader(const Leader&) = delete;
  Leader& operator=(const Leader&) = delete;

  // Closes the port to new connections, stops the coordinator (calls waiting at barriers or
  // for keys are answered with Aborted or Cancelled; connected agents learn at once that their
  // leader is gone) and waits up to `timeout` until it has stopped. Idempotent.
  void Stop(absl::Duration timeout = absl::Seconds(5));

  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  // "HOST:PORT", for AgentOptions::leader (127.0.0.1 when listening on every interface).
  std::string address() const;
  uint64_t incarnation() const { return incarnation_; }
  const CoordinatorActor& coordinator() const { return coordinator_; }
  // What the port serves: the coordinator, or its token gate.
  const CoordinatorActor& published() const { return published_; }
  // The job's event log (every leader has one; WatchEvents reaches it through the coordinator).
  const EventLogActor& events() const { return events_; }
  bool running() const { return running_; }
  // With a state dir: what was recovered, in one line (empty without one).
  const std::string& recovery() const { return recovery_; }
  // The HTTP endpoint's URL, "http://HOST:PORT" (empty without one).
  std::string http_url() const { return http_ ? http_->url() : std::string(); }
  // What the leader's actors count (read by the HTTP endpoint; never null).
  const std::shared_ptr<LeaderMetrics>& metrics() const { return metrics_; }
  // The port of direct key-value calls (0: none).
  uint16_t direct_port() const;

 private:
  Leader(caf::actor_system& system, CoordinatorActor coordinator, CoordinatorActor published,
         std::string host, uint16_t port, uint64_t incarnation);

  caf::actor_system& system_;
  CoordinatorActor coordinator_;
  CoordinatorActor published_;  // the coordinator, or its token gate
  std::string host_;
  uint16_t port_;
  uint64_t incarnation_;
  bool running_ = true;
  bool published_on_port_ = true;
  std::string recovery_;
  caf::actor state_writer_;  // with a state dir: Stop() waits until it released the dir
  EventLogActor events_;     // stopped after the coordinator
  std::shared_ptr<LeaderMetrics> metrics_;
  std::unique_ptr<HttpEndpoint> http_;  // stopped first
  std::unique_ptr<DirectEndpoint> direct_;
};

}  // namespace muster
