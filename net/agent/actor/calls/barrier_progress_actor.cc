#include "muster/net/agent/actor/calls/barrier_progress_actor.h"

#include <algorithm>
#include <utility>

#include <caf/event_based_actor.hpp>

#include "muster/messages/requests/barrier_requests.h"

namespace muster {
namespace {

caf::behavior Poller(caf::event_based_actor* self, AgentControlActor agent, std::string id,
                     caf::timespan every,
                     std::function<void(const proto::BarrierInfo&)> on_progress) {
  every = std::max<caf::timespan>(every, std::chrono::milliseconds(10));
  self->delayed_send(self, every, retry_atom::value);
  proto::GetBarrierProgressRequest request = requests::GetBarrierProgress(id);
  return {
      [=](retry_atom) {
        self->request(agent, every, request)
            .then(
                [=](const proto::GetBarrierProgressResponse& response) {
                  if (on_progress) on_progress(response.barrier());
                },
                [](const caf::error&) {});
        self->delayed_send(self, every, retry_atom::value);
      },
  };
}

}  // namespace

caf::actor SpawnBarrierProgressPoller(caf::actor_system& system, AgentControlActor agent,
                                      std::string barrier_id, caf::timespan every,
                                      std::function<void(const proto::BarrierInfo&)> on_progress) {
  return system.spawn(Poller, std::move(agent), std::move(barrier_id), every,
                      std::move(on_progress));
}

}  // namespace muster
