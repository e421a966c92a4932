// One call to the leader's coordinator on behalf of a blocking caller: a short-lived actor that
// sends the request, watches the leader, and hands the caller the reply, the error, or the
// loss of the leader, whichever comes first. A blocking request alone would wait for its full
// timeout when the leader's process is gone (CAF never fails a request because the receiving
// node died); a monitor sees that within milliseconds.
//
//   CALLING --reply--> tell listener (Response), DONE
//      |--error reply (incl. timeout) | leader down--> tell listener (call_failed_atom), DONE
//      |--cancel--> DONE
#pragma once

#include <utility>

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "muster/messages/vocabulary/atoms.h"
#include "muster/messages/vocabulary/interfaces.h"

namespace muster::cli {

// (call_failed_atom, error): the call failed; the error says why.
using call_failed_atom = caf::atom_constant<caf::atom("callfail")>;

template <class Response>
using LeaderCallListener =
    caf::typed_actor<caf::reacts_to<Response>, caf::reacts_to<call_failed_atom, caf::error>>;

// Stops the call without an answer.
using LeaderCallActor = caf::typed_actor<caf::reacts_to<cancel_atom>>;

template <class Response, class... Args>
LeaderCallActor::behavior_type LeaderCallBehavior(LeaderCallActor::pointer self,
                                                  CoordinatorActor leader, caf::timespan timeout,
                                                  LeaderCallListener<Response> listener,
                                                  Args... args) {
  auto fail = [=](caf::error error) {
    self->send(listener, call_failed_atom::value, std::move(error));
    self->quit();
  };
  self->monitor(leader);
  self->set_down_handler([=](caf::down_msg& down) { fail(std::move(down.reason)); });
  self->request(leader, timeout, std::move(args)...)
      .then(
          [=](Response& response) {
            self->send(listener, std::move(response));
            self->quit();
          },
          [=](caf::error& error) { fail(std::move(error)); });
  return {[=](cancel_atom) { self->quit(); }};
}

// Spawns a call of `args` to `leader`, answered to `listener` within `timeout` at the latest.
template <class Response, class... Args>
LeaderCallActor SpawnLeaderCall(caf::actor_system& system, CoordinatorActor leader,
                                caf::timespan timeout, LeaderCallListener<Response> listener,
                                Args... args) {
  return system.spawn(LeaderCallBehavior<Response, Args...>, std::move(leader), timeout,
                      std::move(listener), std::move(args)...);
}

}  // namespace muster::cli
