// The leader's direct endpoint: a port where a worker process makes key-value calls on its
// calling thread (net/agent/direct/direct_channel.h), each a DirectRequest frame answered with a
// DirectResponse (proto/direct_call.proto), instead of through its network thread and CAF's
// messages. A broker accepts the connections and forks one broker per connection, which passes
// each call to the coordinator as the agent's actor would and writes the answer back. A
// connection's parked gets end with it (the key's directory monitors the connection's broker).
//
// Bounds, as the wire guard's for CAF's protocol (WireLimits): a frame over max_frame_bytes (over
// 16 KiB before a job token was presented) closes the connection before its payload is held;
// a payload over 64 KiB is held within the node's budget of unfinished frames; a frame that is
// not whole within the frame progress timeout (more for a larger one: one timeout a MiB), or a
// token not presented within the handshake timeout, closes it; so does a second request before
// the answer to the first, or bytes that are not a DirectRequest. At most kMaxConnections
// connections are open; the next ones are closed as they come.
//
//   connection: ADMITTING (with a token) --token ok--> SERVING --closed, or a bound broken--> gone
//               SERVING at once without a token        ^ wrong token or another call:
//               Unauthenticated, gone
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <absl/status/statusor.h>
#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/io/doorman.hpp>

#include "muster/messages/vocabulary/interfaces.h"

namespace muster {

class DirectEndpoint {
 public:
  static constexpr size_t kMaxConnections = 1 << 16;

  // Listens on `host`:`port` (0: any free port) of `system`'s guarded network layer (Unavailable
  // when the port cannot be opened, FailedPrecondition without the guarded layer). Nothing is
  // read before Serve.
  static absl::StatusOr<std::unique_ptr<DirectEndpoint>> Open(caf::actor_system& system,
                                                              const std::string& host,
                                                              uint16_t port);
  ~DirectEndpoint();  // Stop()
  DirectEndpoint(const DirectEndpoint&) = delete;
  DirectEndpoint& operator=(const DirectEndpoint&) = delete;

  uint16_t port() const { return port_; }
  // Serves the connections: calls go to `target`, after `token` (empty: none) where one is set.
  void Serve(CoordinatorActor target, std::string token);
  // Closes the port and every connection. Idempotent.
  void Stop();

 private:
  DirectEndpoint(caf::actor_system& system, caf::io::doorman_ptr doorman, uint16_t port);

  caf::actor_system& system_;
  caf::io::doorman_ptr doorman_;  // until Serve
  uint16_t port_;
  caf::actor acceptor_;
};

}  // namespace muster
