// The watcher of `muster kv watch`: a KvWatcherActor that prints every change of the watched
// key (or directory) as one line on stdout, in the order the leader sent them, and tells its
// listener once it printed the requested number of events.
//
//   PRINTING --event--> print line; count reached? --yes--> tell listener (watch_done_atom),
//                                                           DONE (later events are dropped)
#pragma once

#include <cstdint>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/typed_actor.hpp>

#include "muster/messages/vocabulary/interfaces.h"

namespace muster::cli {

// (watch_done_atom): the watcher printed every event it was asked for.
using watch_done_atom = caf::atom_constant<caf::atom("watchdone")>;

using KvPrinterListener = caf::typed_actor<caf::reacts_to<watch_done_atom>>;

// "INSERTED config/a revision=3 value=hello": kind, key, revision and the value with C escapes
// (DELETED events carry no value).
std::string FormatChangeEvent(const proto::KeyValueChangeEvent& event);

// Spawns a watcher that prints events and, after `count` of them (0: never), sends
// watch_done_atom to `listener`. Stop it with an exit message.
KvWatcherActor SpawnKvPrinter(caf::actor_system& system, int64_t count, KvPrinterListener listener);

}  // namespace muster::cli
