// The floor of Muster's transport: a bare CAF remote request/response between two processes,
// with the node configuration Muster ships (NodeConfig) and the same protobuf messages as a
// TryGet, but no Muster actor in between: the server process publishes one echo actor that
// answers every TryGetKeyValueRequest with a fixed TryGetKeyValueResponse.
//   floor         both actors scheduled by CAF's scheduler (what any CAF program pays)
//   floor-hosted  both actors network-hosted (actors/placement.h), as Muster's leader actors are
#include <absl/strings/match.h>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>

#include "muster/actors/placement.h"
#include "muster/bench/harness.h"
#include "muster/bench/muster_bench.h"

namespace muster::bench {

bool IsFloorVariant(const std::string& variant) { return absl::StartsWith(variant, "floor"); }

bool IsHostedVariant(const std::string& variant) { return absl::EndsWith(variant, "hosted"); }

namespace {

caf::behavior Echo(caf::event_based_actor* self, bool hosted) {
  if (hosted) HostOnNetworkThread(self);
  proto::TryGetKeyValueResponse response;
  response.mutable_kv()->set_key("bench/key");
  response.mutable_kv()->set_value(std::string(16, 'v'));
  return {[=](const proto::TryGetKeyValueRequest&) { return response; }};
}

}  // namespace

int RunFloorServer(caf::actor_system& system, const std::string& variant) {
  auto echo = system.spawn(Echo, IsHostedVariant(variant));
  auto port = system.middleman().publish(echo, 0, "127.0.0.1", true);
  if (!port) {
    std::fprintf(stderr, "muster_bench floor: %s\n", system.render(port.error()).c_str());
    return 1;
  }
  Emit("ready", "port=" + std::to_string(*port));
  return 0;
}

CoordinatorActor ConnectToFloor(caf::actor_system& system, int port) {
  auto echo = system.middleman().remote_actor("127.0.0.1", static_cast<uint16_t>(port));
  if (!echo) {
    std::fprintf(stderr, "muster_bench floor: %s\n", system.render(echo.error()).c_str());
    std::_Exit(1);
  }
  // The echo answers only the TryGet of the typed interface, which is all the loop sends.
  return caf::actor_cast<CoordinatorActor>(*echo);
}

}  // namespace muster::bench
