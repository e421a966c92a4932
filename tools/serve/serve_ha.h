// `muster serve --ha-etcd ENDPOINTS --ha-name NAME`: one leader of an HA job (net/ha/ha_leader.h).
// It prints its ready line with its role, a stamped line at each change of role, and serves as
// the active leader or stands by until SIGINT or SIGTERM; then it stops, and resigns at once if
// it was active.
#pragma once

#include <string>

#include <caf/actor_system.hpp>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/net/leader/leader.h"

namespace muster::cli {

// True when --ha-etcd was given.
bool HaRequested();

// Runs the HA leader; returns the exit code.
int ServeHa(caf::actor_system& system, const CoordinatorOptions& options, LeaderEndpoint endpoint,
            const std::string& description);

}  // namespace muster::cli
