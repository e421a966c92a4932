// Pieces of the Muster benchmark program shared by its files: the CAF settings under test, the
// connection to the leader, and the client workloads (muster_clients.cc: key-value requests;
// muster_tasks.cc: many tasks per process for barriers, bring-up, heartbeats, failures).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>

#include "muster/bench/driver.h"
#include "muster/messages/vocabulary/interfaces.h"

namespace muster::bench {

using run_atom = caf::atom_constant<caf::atom("run")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using go_atom = caf::atom_constant<caf::atom("go")>;
using report_atom = caf::atom_constant<caf::atom("report")>;

// Applies --caf=key=value,key=value (e.g. scheduler.policy=stealing,middleman.workers=1) on top
// of Muster's node configuration. Values: integers, durations with a unit (50us, 2ms), atoms.
void ApplyCafOverrides(caf::actor_system_config& cfg, const std::string& overrides);

// Connects to the leader on 127.0.0.1:port; exits the process when that fails.
CoordinatorActor ConnectToLeader(caf::actor_system& system, int port);

// Nanoseconds of the actor clock (steady_clock: the same clock as MonoNs()).
int64_t ClockNs(caf::actor_clock::time_point time);

// Client workloads; each returns the process exit code.
int RunSeqClient(caf::actor_system& system, const ClientArgs& args, bool blocking);
int RunConcClient(caf::actor_system& system, const ClientArgs& args);
int RunBarrierClient(caf::actor_system& system, const ClientArgs& args);
int RunBringupClient(caf::actor_system& system, const ClientArgs& args);
int RunHeartbeatClient(caf::actor_system& system, const ClientArgs& args);
int RunFailureClient(caf::actor_system& system, const ClientArgs& args);
// muster_floor.cc: the bare CAF request/response with Muster's node configuration.
// Variants "floor" and "floor-hosted"; a variant ending in "hosted" hosts the client actors
// on the network thread (actors/caf/placement.h). With the heartbeat workload, "floor" is one bare
// hosted actor per task on the server, which the client's tasks heartbeat to.
bool IsFloorVariant(const std::string& variant);
bool IsHostedVariant(const std::string& variant);
int RunFloorServer(caf::actor_system& system, const std::string& variant,
                   const std::string& workload);
CoordinatorActor ConnectToFloor(caf::actor_system& system, int port);
// muster_resume.cc: agents that reconnect to a restarted durable leader.
int RunResumeClient(caf::actor_system& system, const ClientArgs& args);

}  // namespace muster::bench
