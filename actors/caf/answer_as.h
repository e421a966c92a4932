// CAF 0.17 workaround: a request relayed through the publisher costs a pending request there,
// and CAF keeps an actor's pending requests in a vector searched linearly for each answer.
//
// Answering a request in another actor's name. A reply names its sender, and the node it goes
// to keeps a proxy of that actor, and the sending node tracks the actor for that node, for as
// long as the actor lives. An actor that answers requests delegated to it by an actor other
// nodes already know (a task actor, for its coordinator) answers in that actor's name: its own
// address never leaves its node, and nothing is kept per actor on either side.
//
// (A relay through a request of the publisher's own would do the same, but CAF 0.17 keeps an
// actor's pending requests in a vector: 100,000 registrations relayed at once were quadratic.)
#pragma once

#include <utility>

#include <caf/local_actor.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/message.hpp>
#include <caf/message_id.hpp>

namespace muster {

// A request taken from the message an actor is handling, to be answered later in another
// actor's name (the task actor's registration through the register barrier).
class DeferredAnswer {
 public:
  DeferredAnswer() = default;

  // Takes the request `self` is handling, to be answered naming `as`, and marks it answered.
  // Invalid (and nothing is taken) when the current message is no request waiting for its
  // answer, has no sender, or came through a forwarding chain (stages), or when `as` is null:
  // then the actor answers as usual.
  static DeferredAnswer Take(caf::local_actor* self, caf::strong_actor_ptr as) {
    caf::mailbox_element* request = self->current_mailbox_element();
    if (as == nullptr || request == nullptr || !request->mid.is_request() ||
        request->mid.is_answered() || !request->stages.empty() || request->sender == nullptr) {
      return DeferredAnswer();
    }
    DeferredAnswer answer;
    answer.to_ = request->sender;
    answer.as_ = std::move(as);
    answer.id_ = request->mid.response_id();
    request->mid.mark_as_answered();
    return answer;
  }

  // True until the answer is given.
  bool pending() const { return to_ != nullptr; }

  // Sends `reply` (a response, or an error); only the first call sends. `context` is the
  // execution unit of the actor that answers (nullptr outside of its turn).
  void Deliver(caf::execution_unit* context, caf::message reply) {
    if (to_ == nullptr) return;
    to_->enqueue(std::move(as_), id_, std::move(reply), context);
    to_ = nullptr;
  }

 private:
  caf::strong_actor_ptr to_;
  caf::strong_actor_ptr as_;
  caf::message_id id_;
};

// Answers the request `self` is handling with `reply` (a response, or an error) at once,
// naming `as` as its sender. Returns false, and sends nothing, when DeferredAnswer::Take finds
// no request to take: then the caller answers as usual.
inline bool AnswerAs(caf::local_actor* self, const caf::strong_actor_ptr& as, caf::message reply) {
  DeferredAnswer answer = DeferredAnswer::Take(self, as);
  if (!answer.pending()) return false;
  answer.Deliver(self->context(), std::move(reply));
  return true;
}

}  // namespace muster
