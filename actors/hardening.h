// Hardening shared by the actors that other nodes can reach (the coordinator, the token gate)
// or that handle what they send (the heartbeat monitor).
#pragma once

#include <caf/error.hpp>
#include <caf/scheduled_actor.hpp>

namespace muster {

// An error sent to `self` as a message of its own (never the answer to a request, which goes to
// that request's handler) is dropped: CAF 0.17's default error handler ends the actor, and any
// peer holding its handle may send one.
inline void DropErrorMessages(caf::scheduled_actor* self) {
  self->set_error_handler([](caf::error&) {});
}

}  // namespace muster
