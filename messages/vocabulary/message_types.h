// Registers every message type that crosses actor or node boundaries, in one place.
#pragma once

#include <caf/actor_system_config.hpp>

namespace muster {

// Adds every muster::proto message, every typed actor handle that travels inside messages,
// and the status error category to `cfg`. Every node of a job must call it.
void AddMessageTypes(caf::actor_system_config& cfg);

}  // namespace muster
