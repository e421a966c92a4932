// The launcher actor of `muster run`: it registers this host's tasks with the coordinator as
// their launcher, runs one process per task (net/launcher/task_process.h) with the task's identity
// in its environment, prints their output line by line behind the task's name, and carries out what
// the coordinator sends after each task failure: restart some tasks (the old process is stopped
// with SIGTERM, SIGKILL after the stop timeout, then the next generation starts), or stop (the job
// failed for good: the processes get the stop timeout to leave by themselves, then SIGTERM). A
// process that exits non-zero on its own is reported to the coordinator (TaskExited), so that
// the supervision policy decides about it as about any other failure. Processes are read and
// reaped on a 20 ms timer of the actor clock: nothing blocks. Its behaviour is in
// launcher_actor.cc, launcher_spares.cc and launcher_finish.cc, over launcher_state.h.
//
//   REGISTERING --registered--> RUNNING --every process finished--> DONE
//        |                         |  (hosting the leader: DONE once no other launcher is
//        |                         |   registered and no task is connected)
//        +--refused--> DONE(1)     +--stop signal | leader lost | job failed--> STOPPING --> DONE
//                                  |
//                                  +--leader lost, following an HA job's leaders--> FOLLOWING
//   FOLLOWING --the active leader took it back (rejoin)--> RUNNING
//   FOLLOWING --no leader took it back within the timeout--> STOPPING
//
// While FOLLOWING the processes run on (their agents follow the leaders by themselves), exits
// are kept to be reported to the next leader, and the registration names the generation of
// each process it runs: the next leader restarts what it recorded as restarted meanwhile.
//
// A restart (or a start) takes a spare process when one runs (--spares): the launcher writes the
// task's variables to the spare's key and the spare becomes the task's process.
//
// One task's process:
//   RUNNING --exited non-zero--> REPORTED --restart--> RUNNING (next generation)
//      |  \--exited 0--> FINISHED    \--not recorded as a failure | failed for good--> FINISHED
//      +--restart | failed for good | stop--> STOPPING --exited--> RUNNING (restart) | FINISHED
//
// At DONE it sends its listener (launcher_done_atom, exit code, message): 0 when every process
// exited 0 and the job did not fail; 1 naming the task and error that ended the job; 128+N after
// signal N.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include "muster/messages/vocabulary/interfaces.h"
#include "muster/net/agent/session/leader_session_actor.h"
#include "muster/net/launcher/task_process.h"
#include "muster/net/process/shutdown_signals.h"

namespace muster::cli {

using launcher_done_atom = caf::atom_constant<caf::atom("l_done")>;
using tick_atom = caf::atom_constant<caf::atom("l_tick")>;

using LauncherListener = caf::typed_actor<caf::reacts_to<launcher_done_atom, int, std::string>>;

// The coordinator's view (SupervisionEvent), a stop request (shutdown_atom, signal: the signal
// is forwarded to every process), and the actor's own timer.
using LauncherControlActor =
    LauncherActor::extend<caf::reacts_to<shutdown_atom, int>, caf::reacts_to<tick_atom>>;

struct LauncherConfig {
  CoordinatorActor leader;
  std::string leader_address;  // HOST:PORT, as the tasks reach the leader
  // An HA job's leaders as given, "etcd://ENDPOINTS/NAME" (empty: none): the tasks'
  // MUSTER_LEADER then, so that their agents read the leaders themselves (and again when none
  // of those is active); MASTER_ADDR and MASTER_PORT stay the first address's.
  std::string leader_registry;
  std::string host;            // this host's name, for the coordinator's messages
  std::vector<proto::CoordinatedTask> tasks;
  std::vector<std::string> command;
  TaskProcess::Environment environment;  // added for every task (token and TLS files)
  // Added for one task (by TaskName), after `environment`: its own certificate, when the job
  // has per-task certificates.
  absl::flat_hash_map<std::string, TaskProcess::Environment> task_environment;
  caf::timespan stop_timeout = std::chrono::seconds(10);
  // This process hosts the leader: stopping the launcher stops the leader, so it waits for the
  // tasks of the other launchers too.
  bool hosting = false;
  // Spare processes kept running (net/launcher/spare_pool.h): a restarted task takes one, if
  // any, instead of a new process.
  int spares = 0;
  // An HA job's leaders (net/ha/ha_leader.h): when the leader is lost, a session with these
  // options finds the next active leader, and the launcher registers with it again (rejoin)
  // instead of stopping its tasks. Without it a lost leader stops every task.
  std::optional<LeaderSessionOptions> follow;
};

LauncherControlActor SpawnLauncher(caf::actor_system& system, LauncherConfig config,
                                   LauncherListener listener);

}  // namespace muster::cli
