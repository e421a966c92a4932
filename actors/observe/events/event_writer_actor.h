// The event writer: the one actor of a leader that writes its event file (muster serve
// --events). The event log actor hands it the JSON lines of its events in batches; it appends
// each batch to the file and answers once the batch is written. It runs detached (its own
// thread), since a write may block; the leader's other actors never wait for it.
//
//   WRITING --a write failed--> FAILED (that batch and every later one are answered with the
//                                        error; the event log keeps its events in memory only)
#pragma once

#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "muster/actors/observe/events/event_file.h"

namespace muster {

// (event_append_atom, lines): append these lines (each ending in a newline) to the event file.
using event_append_atom = caf::atom_constant<caf::atom("evappend")>;

// Replies true once the batch is written. Possible errors: those of EventFile::Append (naming
// the file and the cause).
using EventWriterActor =
    caf::typed_actor<caf::replies_to<event_append_atom, std::string>::with<bool>>;

// Spawns the writer of `file` (detached); the file is closed when the writer ends.
EventWriterActor SpawnEventWriter(caf::actor_system& system, std::shared_ptr<EventFile> file);

}  // namespace muster
