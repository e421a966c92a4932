// A listening socket of the leader's direct endpoint: its connections are plain TCP streams,
// read by the endpoint's brokers as direct-call frames (proto/direct_call.proto) instead of
// going through the wire guard, which reads CAF's own protocol. It sheds connections like the
// guarded doorman when the process is out of descriptors.
#pragma once

#include <cstdint>
#include <string>

#include <caf/expected.hpp>
#include <caf/io/doorman.hpp>

#include "muster/net/transport/wire/guarded_multiplexer.h"

namespace muster {

// Listens on `host`:`port` (empty host or "0.0.0.0": every interface; port 0: any free one).
caf::expected<caf::io::doorman_ptr> NewPlainDoorman(GuardedMultiplexer& mpx, uint16_t port,
                                                    const std::string& host);

}  // namespace muster
