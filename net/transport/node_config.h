// Configuration of an actor system that takes part in a Muster job (leader or worker):
// message types, the network layer, low-latency scheduling and CAF's connection heartbeats.
#pragma once

#include <chrono>

#include <caf/actor_system_config.hpp>
#include <caf/timespan.hpp>

#include "muster/net/transport/tls/tls_context.h"
#include "muster/net/transport/wire/frame_guard.h"

namespace muster {

struct NodeOptions {
  // How often CAF's network layer sends keep-alive frames on each connection; it also checks
  // `connection_timeout` at this pace. Every node of a job must send them more often than its
  // peers' timeout, or they declare it dead: the leader sends them every 500 ms (workers time it
  // out after 2 s at least), workers every quarter of their timeout (WorkerNodeOptions).
  caf::timespan connection_heartbeat_interval = std::chrono::milliseconds(500);
  // Closes a connection that carried nothing for this long (0: never). Workers set it to detect
  // a frozen leader; the leader leaves it 0 and judges workers by their task heartbeats.
  caf::timespan connection_timeout = caf::timespan{0};
  // Condition-variable scheduling and no separate deserialization workers: the lowest
  // round-trip latency for a control plane (see docs/performance.md).
  bool low_latency_scheduler = true;
  // Scheduler threads of the low-latency scheduler. The network thread runs the hosted actors
  // (the leader's services, an agent's actor); these run the rest. A node whose scheduled actors
  // never block may take 1: the Python binding's agents do (their callbacks only queue work for
  // Python's own thread). A C++ agent's callbacks run on them and may block: 2.
  int scheduler_threads = 2;
  // An outbound TCP connect gives up after this long (DialTcp, which CAF's middleman actor calls
  // for every new address): a SYN lost once is retried by the kernel after 1 s, so 2 s lets it
  // through, while a dial to a peer cut off holds the middleman actor for 2 s (4 s for an IPv6
  // address and its IPv4 fallback; a name lookup not included) instead of the kernel's two
  // minutes. Each connect request queued behind it gets a dial of its own.
  caf::timespan connect_timeout = std::chrono::seconds(2);
  // What a peer may send before and after its handshake (see
  // net/transport/wire/guarded_multiplexer.h).
  WireLimits wire_limits;
  // Mutual TLS for every connection of the node (see net/transport/tls/tls_context.h). Unset: the
  // files of $MUSTER_TLS_CERT, $MUSTER_TLS_KEY and $MUSTER_TLS_CA, if those are set; else plain
  // TCP. Leader::Start and Agent::Create refuse files that do not load (CheckTlsFiles).
  TlsFiles tls;
};

// Applies `options` and Muster's message types to a user's configuration.
void ConfigureNode(caf::actor_system_config& cfg, const NodeOptions& options = {});

// A ready-made configuration for Muster processes.
class NodeConfig : public caf::actor_system_config {
 public:
  explicit NodeConfig(const NodeOptions& options = {});
};

}  // namespace muster
