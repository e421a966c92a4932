// Answering a request in another actor's name. A reply names its sender, and the node it goes
// to keeps a proxy of that actor, and the sending node tracks the actor for that node, for as
// long as the actor lives. An actor that answers requests delegated to it by an actor other
// nodes already know (a task actor, for its coordinator) answers in that actor's name: its own
// address never leaves its node, and nothing is kept per actor on either side.
//
// (A relay through a request of the publisher's own would do the same, but CAF 0.17 keeps an
// actor's pending requests in a vector: 100,000 registrations relayed at once were quadratic.)
#pragma once

#include <caf/local_actor.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/message.hpp>

namespace muster {

// Sends `reply` (a response, or an error) to the request `self` is handling, naming `as` as its
// sender, and marks the request answered. Returns false, and sends nothing, when the current
// message is no request waiting for its answer, has no sender, or came through a forwarding
// chain (stages), or when `as` is null: then the caller answers as usual.
inline bool AnswerAs(caf::local_actor* self, const caf::strong_actor_ptr& as, caf::message reply) {
  caf::mailbox_element* request = self->current_mailbox_element();
  if (request == nullptr || as == nullptr || !request->mid.is_request() ||
      request->mid.is_answered() || !request->stages.empty() || request->sender == nullptr) {
    return false;
  }
  request->sender->enqueue(as, request->mid.response_id(), std::move(reply), self->context());
  request->mid.mark_as_answered();
  return true;
}

}  // namespace muster
