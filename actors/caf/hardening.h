// CAF 0.17 workarounds: its default error handler ends an actor that is sent an error message,
// and its default handler prints every unexpected message raw to the console.
//
// Hardening shared by the actors that other nodes can reach (the coordinator, the token gate)
// or that handle what they send (the heartbeat monitor).
#pragma once

#include <cstdint>

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
// node's (net/transport/wire/frame_guard.h): a peer cannot pass for a local actor.
inline bool FromThisNode(caf::local_actor* self) {
  const caf::strong_actor_ptr& sender = self->current_sender();
  return sender && sender->node() == self->node();
}

// Makes `self` drop and count the messages none of its handlers takes, instead of CAF 0.17's
// default, which prints each one raw to the console: any peer may send the coordinator a
// message of its own type, or an actor that once sent to another node (a key-value directory)
// something shaped like one of CAF's own replies, thousands a second and with terminal escapes
// in them. A dropped request is answered with CAF's unexpected_message error (its requester does
// not wait in vain); any other message gets no answer (an error would end a local sender that
// has no error handler, and would echo a peer's flood back to it). Per process, at most one
// line a second goes to stderr: how many were dropped since the last line, and the latest one
// (its receiver's kind, the sender's node, its content escaped and cut short). Time is the
// actor clock's.
void DropUnexpectedMessages(caf::scheduled_actor* self);

// How many unexpected messages the actors of this process dropped since it started.
uint64_t UnexpectedMessagesDropped();

// Forgets the messages not logged yet, and logs the next one whatever the time of the last line
// (each test's simulated clock starts anew).
void ResetUnexpectedMessageLogForTesting();

}  // namespace muster
