// What an HA leader publishes on its port (net/ha/ha_leader.h; a new one after each step down,
// whose end sends the old one's agents to look for the active leader again). While it
// stands by, every message is answered with Unavailable naming the active leader
// (StandbyLeaderError); while it is active, every message goes to the leader it fronts (the
// coordinator, or its token gate), which answers as it would on its own port. Only its owner
// switches it (TellHaFront*, sent as the front itself).
//
//   STANDBY(active leader) --TellHaFrontActive(target)--> ACTIVE(target)
//   ACTIVE --TellHaFrontStandby(active leader)--> STANDBY
//   STANDBY --TellHaFrontStandby(another)--> STANDBY (names the new one)
#pragma once

#include <string>

#include <caf/actor_system.hpp>

#include "muster/messages/vocabulary/interfaces.h"

namespace muster {

// `name` is the HA job's name, for the standby's answer. Starts STANDBY, naming nobody.
CoordinatorActor SpawnHaFront(caf::actor_system& system, std::string name);

// Safe from any thread.
void TellHaFrontActive(const CoordinatorActor& front, const CoordinatorActor& target);
void TellHaFrontStandby(const CoordinatorActor& front, const std::string& active_leader);

}  // namespace muster
