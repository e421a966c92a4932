#include "muster/net/agent/calls/callback_runner_actor.h"

#include <caf/typed_event_based_actor.hpp>

namespace muster {

CallbackRunnerActor SpawnCallbackRunner(caf::actor_system& system) {
  return system.spawn([](CallbackRunnerActor::pointer self) -> CallbackRunnerActor::behavior_type {
    return {
        [](const UserCallback& callback) { callback.run(); },
        [self](caf::close_atom) { self->quit(); },
        [](caf::ok_atom ok) { return ok; },
    };
  });
}

}  // namespace muster
