// The barrier progress poller: while a task waits at a barrier, it asks the agent actor for
// the barrier's open instance every `every` and hands it to a callback. The waiting call stops
// it with an exit message when the barrier finishes.
//
//   POLLING --every--> GetBarrierProgress --open instance--> callback; POLLING
//      +--exit message--> STOPPED   (a NotFound or other error just waits for the next round)
#pragma once

#include <functional>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "muster/net/agent/actor/agent_actor.h"

namespace muster {

caf::actor SpawnBarrierProgressPoller(caf::actor_system& system, AgentControlActor agent,
                                      std::string barrier_id, caf::timespan every,
                                      std::function<void(const proto::BarrierInfo&)> on_progress);

}  // namespace muster
