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

// True when the message `self` is handling comes from an actor of its own node (process). The
// node is the one a peer named in its handshake, which the network guard keeps from being this
// node's (net/transport/frame_guard.h): a peer cannot pass for a local actor.
inline bool FromThisNode(caf::local_actor* self) {
  const caf::strong_actor_ptr& sender = self->current_sender();
  return sender && sender->node() == self->node();
}

}  // namespace muster
