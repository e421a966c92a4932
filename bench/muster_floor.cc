// The floor of Muster's transport: a bare CAF remote request/response between two processes,
// with the node configuration Muster ships (NodeConfig) and the same protobuf messages as a
// TryGet, but no Muster actor in between: the server process publishes one echo actor that
// answers every TryGetKeyValueRequest with a fixed TryGetKeyValueResponse.
//   floor         both actors scheduled by CAF's scheduler (what any CAF program pays)
//   floor-hosted  both actors network-hosted (actors/caf/placement.h), as Muster's leader
//                 actors are
// For the heartbeat workload, "floor" is the least the design holds per task: the server
// publishes a registrar that, for each task's agent actor it is sent, spawns one hosted actor
// that monitors the agent (so the server also holds a proxy of it) and answers the task's
// HeartbeatRequests with an empty HeartbeatResponse. No coordinator, no task state.
// "floor-oneway": the same, but the tasks send their beats as one-way messages that are not
// answered (what a beat would cost the leader if it were not a request).
#include <absl/strings/match.h>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>

#include "muster/actors/caf/placement.h"
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

// One task's actor on the floor: watches the task's agent, answers its beats.
// With `oneway`, the beats come unanswered.
caf::behavior FloorTask(caf::event_based_actor* self, const caf::actor& agent, bool oneway) {
  HostOnNetworkThread(self);
  self->monitor(agent);
  self->set_down_handler([self](caf::down_msg&) { self->quit(); });
  if (oneway) return {[](const proto::HeartbeatRequest&) {}};
  return {[](const proto::HeartbeatRequest&) { return proto::HeartbeatResponse(); }};
}

// Answers each agent actor with the task actor it spawned for it.
caf::behavior Registrar(caf::event_based_actor* self, bool oneway) {
  HostOnNetworkThread(self);
  return {
      [self, oneway](const caf::actor& agent) { return self->spawn(FloorTask, agent, oneway); }};
}

}  // namespace

int RunFloorServer(caf::actor_system& system, const std::string& variant,
                   const std::string& workload) {
  auto published = workload == "heartbeat" ? system.spawn(Registrar, variant == "floor-oneway")
                                           : system.spawn(Echo, IsHostedVariant(variant));
  auto port = system.middleman().publish(published, 0, "127.0.0.1", true);
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
  // The echo answers only the TryGet of the typed interface, which is all the loop sends (the
  // heartbeat registrar only actor handles, which is all RegisterOnFloor sends).
  return caf::actor_cast<CoordinatorActor>(*echo);
}

}  // namespace muster::bench
