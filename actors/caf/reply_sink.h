// CAF 0.17 workaround: a thread that is not an actor can only call an actor through a
// scoped_actor (a mailbox and a condition variable per call) or a helper actor (a spawn and a
// scheduler wake-up per call).
//
// The reply sink: the sender of one request made by a thread that is not an actor (a blocking
// Agent call, or CallAsync). It has no mailbox and is never scheduled: the reply runs
// `on_reply` at once, on the thread that delivers it. A call through a scoped_actor (an actor
// with its own mailbox and condition variable per call) or a helper actor (a spawn and a
// scheduler wake-up per call) cost a third of a TryGet through the Agent
// (docs/performance.md, "Python").
//
//   WAITING --the reply (the response, or an error: the receiver was down)--> DONE
//   WAITING --the last reference dropped, never answered--> DONE (on_reply gets `unanswered`)
// on_reply runs exactly once. It runs on an actor's thread, inside that actor's turn: it must
// return quickly and never wait for an actor.
#pragma once

#include <functional>

#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/message.hpp>

namespace muster {

using ReplyCallback = std::function<void(caf::message& reply)>;

// Sends `request` to `receiver` as a request whose sender is a new reply sink. `unanswered` is
// what on_reply gets when the receiver drops the request without an answer.
void RequestWithSink(const caf::strong_actor_ptr& receiver, caf::message request,
                     ReplyCallback on_reply, caf::error unanswered);

}  // namespace muster
