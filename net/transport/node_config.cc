#include "muster/net/transport/node_config.h"

#include <algorithm>
#include <chrono>

#include <caf/atom.hpp>
#include <caf/io/middleman.hpp>
#include <caf/settings.hpp>

#include "muster/messages/vocabulary/message_types.h"
#include "muster/net/transport/wire/guarded_multiplexer.h"

namespace muster {

void ConfigureNode(caf::actor_system_config& cfg, const NodeOptions& options) {
  AddMessageTypes(cfg);
  cfg.load<caf::io::middleman, GuardedMultiplexer>();
  cfg.module_factories.push_back(&MakeNodeScheduler);
  // Read by GuardedMultiplexer; not CAF options, so they go into the settings directly.
  caf::put(cfg.content, "muster.max-frame-bytes", int64_t{options.wire_limits.max_frame_bytes});
  caf::put(cfg.content, "muster.max-handshake-bytes",
           int64_t{options.wire_limits.max_handshake_bytes});
  caf::put(cfg.content, "muster.handshake-timeout-ms", options.wire_limits.handshake_timeout_ms);
  caf::put(cfg.content, "muster.max-unfinished-frame-bytes",
           static_cast<int64_t>(options.wire_limits.max_unfinished_frame_bytes));
  caf::put(cfg.content, "muster.frame-progress-timeout-ms",
           options.wire_limits.frame_progress_timeout_ms);
  caf::put(cfg.content, "muster.max-connections-per-host",
           int64_t{options.wire_limits.max_connections_per_host});
  SetTlsFiles(cfg, options.tls.enabled() ? options.tls : TlsFilesFromEnvironment());
  caf::put(
      cfg.content, "muster.connect-timeout-ms",
      static_cast<int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(options.connect_timeout).count()));
  cfg.set("middleman.heartbeat-interval", options.connection_heartbeat_interval);
  cfg.set("middleman.connection-timeout", options.connection_timeout);
  if (options.low_latency_scheduler) {
    cfg.set("scheduler.policy", caf::atom("sharing"));
    cfg.set("scheduler.max-threads", std::max(options.scheduler_threads, 1));
    cfg.set("middleman.workers", 0);
  }
  cfg.set("logger.console", caf::atom("none"));
}

NodeConfig::NodeConfig(const NodeOptions& options) { ConfigureNode(*this, options); }

}  // namespace muster
