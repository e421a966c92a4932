#include "muster/net/leader/leader_endpoint.h"

#include <absl/strings/str_cat.h>
#include <caf/io/middleman.hpp>

#include "muster/net/transport/wire/guarded_multiplexer.h"

namespace muster {

absl::StatusOr<uint16_t> PublishCoordinator(caf::actor_system& system,
                                            const CoordinatorActor& coordinator, uint16_t port,
                                            const std::string& host) {
  // Before the port opens: its peers may send messages to the coordinator (or gate) alone.
  auto* guarded = dynamic_cast<GuardedMultiplexer*>(&system.middleman().backend());
  if (guarded != nullptr && !guarded->published().Add(coordinator->id())) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this node published ", PublishedActors::kCapacity,
                     " coordinators already; start the leader in an actor system of its own"));
  }
  const char* in = host.empty() || host == "0.0.0.0" ? nullptr : host.c_str();
  caf::expected<uint16_t> bound = system.middleman().publish(coordinator, port, in, true);
  if (!bound) {
    if (guarded != nullptr) guarded->published().Forget(coordinator->id());
    return absl::UnavailableError(absl::StrCat("cannot listen on ", host.empty() ? "*" : host, ":",
                                               port, ": ", system.render(bound.error()),
                                               "; pick another --port or free this one"));
  }
  return *bound;
}

void UnpublishCoordinator(caf::actor_system& system, const CoordinatorActor& coordinator,
                          uint16_t port) {
  system.middleman().unpublish(coordinator, port);
  if (auto* guarded = dynamic_cast<GuardedMultiplexer*>(&system.middleman().backend())) {
    guarded->published().Remove(coordinator->id());
  }
}

}  // namespace muster
