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
//
// AwaitExit is the same for the end of actors: a thread that stopped them waits for their exits
// without a scoped_actor (CAF's only way: a monitor and a receive).
#pragma once

#include <functional>
#include <vector>

#include <absl/time/time.h>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/error.hpp>
#include <caf/message.hpp>

namespace muster {

using ReplyCallback = std::function<void(caf::message& reply)>;

// Sends `request` to `receiver` as a request whose sender is a new reply sink. `unanswered` is
// what on_reply gets when the receiver drops the request without an answer. Returns the sink's
// address: the request's sender, by which a later message of the same thread can name this
// call (it arrives after the request: one thread's messages to an actor keep their order).
caf::actor_addr RequestWithSink(const caf::strong_actor_ptr& receiver, caf::message request,
                                ReplyCallback on_reply, caf::error unanswered);

// Waits until every actor of `actors` has exited (at once for one gone already), at most
// `timeout`; false when the timeout passed first. Never call it inside an actor.
bool AwaitExit(const std::vector<caf::actor_addr>& actors, absl::Duration timeout);

}  // namespace muster
