#include "muster/net/ha/ha_front_actor.h"

#include <utility>

#include <caf/event_based_actor.hpp>
#include <caf/message_view.hpp>
#include <caf/stateful_actor.hpp>

#include "muster/actors/caf/hardening.h"
#include "muster/actors/caf/placement.h"
#include "muster/messages/status/status_codec.h"
#include "muster/net/leader/standby_leader.h"

namespace muster {
namespace {

using ha_active_atom = caf::atom_constant<caf::atom("haactive")>;
using ha_standby_atom = caf::atom_constant<caf::atom("hastandby")>;

struct FrontState {
  static inline const char* name = "muster.ha_front";
  std::string job;
};

using FrontPointer = caf::stateful_actor<FrontState>*;

caf::behavior Active(FrontPointer self, CoordinatorActor target);
caf::behavior Standby(FrontPointer self, std::string active);

// The owner's switches, the same in both states (the states differ in what they do with
// everything else, their default handler): only the front itself sends them (TellHaFront*).
caf::behavior Switches(FrontPointer self) {
  auto from_owner = [self] { return self->current_sender() == self->ctrl(); };
  return {
      [self, from_owner](ha_standby_atom, std::string& active) {
        if (from_owner()) self->become(Standby(self, std::move(active)));
      },
      [self, from_owner](ha_active_atom, caf::actor& target) {
        if (from_owner()) self->become(Active(self, caf::actor_cast<CoordinatorActor>(target)));
      },
  };
}

caf::behavior Active(FrontPointer self, CoordinatorActor target) {
  self->set_default_handler(
      [self, target](caf::scheduled_actor*, caf::message_view& view) -> caf::result<caf::message> {
        auto promise = self->make_response_promise();
        promise.delegate(caf::actor_cast<caf::actor>(target), view.move_content_to_message());
        return caf::delegated<caf::message>{};
      });
  return Switches(self);
}

caf::behavior Standby(FrontPointer self, std::string active) {
  self->set_default_handler(
      [self, active](caf::scheduled_actor*, caf::message_view&) -> caf::result<caf::message> {
        return ToError(StandbyLeaderError(self->state.job, active));
      });
  return Switches(self);
}

}  // namespace

CoordinatorActor SpawnHaFront(caf::actor_system& system, std::string name) {
  caf::actor front = system.spawn(
      [](FrontPointer self, std::string job) {
        HostOnNetworkThread(self);
        DropErrorMessages(self);
        self->state.job = std::move(job);
        return Standby(self, "");
      },
      std::move(name));
  return caf::actor_cast<CoordinatorActor>(front);
}

void TellHaFrontActive(const CoordinatorActor& front, const CoordinatorActor& target) {
  caf::actor self = caf::actor_cast<caf::actor>(front);
  if (self) caf::send_as(self, self, ha_active_atom::value, caf::actor_cast<caf::actor>(target));
}

void TellHaFrontStandby(const CoordinatorActor& front, const std::string& active_leader) {
  caf::actor self = caf::actor_cast<caf::actor>(front);
  if (self) caf::send_as(self, self, ha_standby_atom::value, active_leader);
}

}  // namespace muster
