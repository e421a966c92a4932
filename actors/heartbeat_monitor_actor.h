// The heartbeat monitor of one connected task, linked to its task actor. Every heartbeat moves
// the deadline to now + timeout; when the deadline passes without one, the monitor quits with
// Unavailable, and the link takes the task actor down with the same reason. There is at most
// one timer per monitor and no periodic scan: the task fails exactly at its deadline.
//
//   WATCHING --beat--> WATCHING (deadline = now + timeout)
//      |
//      +--deadline passed--> DEAD (exit reason: Unavailable "heartbeat timeout")
#pragma once

#include <caf/typed_actor.hpp>

#include "muster/messages/atoms.h"
#include "muster/messages/interfaces.h"

namespace muster {

using HeartbeatMonitorActor =
    caf::typed_actor<caf::reacts_to<beat_atom>, caf::reacts_to<deadline_atom>>;

// Spawns a monitor for `task`, linked to `owner`; the first deadline is now + timeout.
HeartbeatMonitorActor SpawnHeartbeatMonitor(caf::local_actor* owner,
                                            const proto::CoordinatedTask& task,
                                            caf::timespan timeout);

}  // namespace muster
