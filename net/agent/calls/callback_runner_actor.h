// The callback runner of an agent: runs the user's callbacks (on_error, on_preemption, a
// watch's on_change) in the order the agent actor sends them, on a scheduler thread. The agent
// actor itself runs on the network thread, where user code must not run; on the runner a
// callback may also call the agent's blocking methods. One runner per Agent, which waits for it
// in its destructor, so no callback runs after ~Agent has returned.
//
//   RUNNING --UserCallback--> RUNNING (ran it) --ok_atom--> RUNNING (answered: all before it ran)
//   RUNNING --close_atom (the agent actor ended)--> stopped
#pragma once

#include <functional>

#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/typed_actor.hpp>

namespace muster {

// A user callback, run by the callback runner. Local messages only, never sent to another node.
struct UserCallback {
  std::function<void()> run;
};

}  // namespace muster

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(muster::UserCallback)

namespace muster {

// Stops on close_atom (the agent actor sends it when it ends, after its last callback); ok_atom
// is answered once the callbacks sent before it have run.
using CallbackRunnerActor =
    caf::typed_actor<caf::reacts_to<UserCallback>, caf::reacts_to<caf::close_atom>,
                     caf::replies_to<caf::ok_atom>::with<caf::ok_atom>>;

CallbackRunnerActor SpawnCallbackRunner(caf::actor_system& system);

}  // namespace muster
