// CAF's printer (where aout writes), as an event-based actor on the scheduler. CAF 0.17 runs it
// as a detached blocking actor: a thread of its own in every actor system, idle for the
// process's life unless something writes to aout (nothing of Muster does). The node's
// scheduler (MakeNodeScheduler) puts this one in its place. Same protocol as CAF's:
//   (add, actor id, text)            appends to that actor's line; prints the complete lines
//   (flush, actor id)                prints what that actor has, complete or not
//   (delete, actor id)               prints and forgets it (the actor ended)
//   (redirect, file, flags)          every actor's output into `file` (appended with
//                                    actor_ostream::append), "" back to the default sink
//   (redirect, actor id, file, flags) one actor's
//
//   RUNNING --exit--> DONE (lines are printed as they complete: a line left without its newline
//                           is printed then)
#pragma once

#include <functional>
#include <string>

#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>

namespace muster {

// Where output goes when not redirected: standard output by default.
using PrinterSink = std::function<void(const std::string&)>;

caf::behavior ScheduledPrinter(caf::event_based_actor* self, PrinterSink out);

}  // namespace muster
