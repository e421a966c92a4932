// A scriptable worker for the multi-process tests. It runs one scenario with the Agent API and
// prints one line per event ("EVENT <what> ..."), with wall-clock microseconds where the test
// measures latencies. Exit code 0 when the scenario ran as written, 1 otherwise.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/status/status.h>
#include <absl/strings/str_cat.h>
#include <absl/synchronization/notification.h>
#include <absl/time/clock.h>
#include <caf/actor_system.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/agent.h"
#include "muster/net/agent/distributed_runtime_client.h"
#include "muster/net/leader/auth/job_token.h"
#include "tests/e2e/programs/worker_events.h"

ABSL_FLAG(std::string, leader, "127.0.0.1:7400", "leader HOST:PORT");
ABSL_FLAG(std::string, job, "worker", "job name");
ABSL_FLAG(int, task, 0, "task id");
ABSL_FLAG(int, tasks, 1, "tasks in the job (scenarios batched, barrier_wait)");
ABSL_FLAG(
    std::string, scenario, "full",
    "full | wait_error | pending_get | watch | connect | exit_without_shutdown | xla | batched | "
    "shutdown | probes | outsider | drop_agent | drop_rejoin | rejoin_peer | drop_pending | "
    "error_shutdown | xla_shutdown | xla_error_shutdown | barrier_wait");
ABSL_FLAG(int, local_tasks, 2, "tasks hosted by this process, from --task on (scenario batched)");
ABSL_FLAG(int64_t, heartbeat_timeout_ms, 0, "heartbeat timeout (0: the leader's)");
ABSL_FLAG(int64_t, connection_timeout_ms, 0,
          "CAF's connection timeout (0: WorkerNodeOptions' of the heartbeat timeout)");
ABSL_FLAG(int64_t, register_timeout_ms, 20'000, "connect deadline");
ABSL_FLAG(bool, recoverable, false, "recoverable task");
ABSL_FLAG(int64_t, wait_ms, 20'000, "how long to wait for an expected event");
ABSL_FLAG(std::string, token_file, "", "the job token to present (scenario full and others)");
ABSL_FLAG(int64_t, bootstrap_bytes, 0,
          "scenario full: task 0 shares a value of this many bytes instead of \"id-42\"");

namespace {

using ::muster::testing::Describe;
using ::muster::testing::Event;
using ::muster::testing::NowMicros;

struct Worker {
  std::unique_ptr<muster::Agent> agent;
  absl::Notification error_seen;
};

using muster::proto::CoordinationServiceDeviceInfo;

CoordinationServiceDeviceInfo LocalTopology(int task) {
  CoordinationServiceDeviceInfo info;
  auto* node = info.mutable_xla()->mutable_devices()->add_nodes();
  node->set_node_id(task);
  for (int d = 0; d < 2; ++d) node->add_devices()->set_local_device_ordinal(d);
  return info;
}

int Full(Worker& w) {
  const int task = absl::GetFlag(FLAGS_task);
  auto global = w.agent->WaitForAllTasks(LocalTopology(task));
  if (!global.ok()) return Event("wait_for_all " + Describe(global.status())), 1;
  std::string ids;
  for (const auto& node : global->xla().devices().nodes()) {
    if (node.node_id() != task) continue;
    for (const auto& d : node.devices()) absl::StrAppend(&ids, d.global_device_id(), ",");
  }
  Event("global_ids " + ids);
  absl::Notification got;
  absl::StatusOr<std::string> value;
  if (task != 0) {
    w.agent->GetKeyValueAsync("nccl/unique_id", [&](const absl::StatusOr<std::string>& v) {
      value = v;
      got.Notify();
    });
  }
  if (auto s = w.agent->WaitAtBarrier("gets_started", absl::Seconds(20)); !s.ok()) {
    return Event("barrier " + Describe(s)), 1;
  }
  const int64_t bytes = absl::GetFlag(FLAGS_bootstrap_bytes);
  std::string shared = "id-42";
  if (bytes > 0) {
    shared.assign(static_cast<size_t>(bytes), '\0');
    for (size_t i = 0; i < shared.size(); ++i) shared[i] = static_cast<char>('a' + i % 23);
  }
  if (task == 0) {
    if (auto s = w.agent->InsertKeyValue("nccl/unique_id", shared); !s.ok()) {
      return Event("insert " + Describe(s)), 1;
    }
    value = shared;
  } else if (!got.WaitForNotificationWithTimeout(absl::Seconds(20))) {
    return Event("get timed out"), 1;
  }
  if (!value.ok()) {
    Event("nccl " + Describe(value.status()));
  } else if (bytes > 0) {
    Event(*value == shared ? absl::StrCat("nccl bytes=", value->size(), " intact")
                           : absl::StrCat("nccl bytes=", value->size(), " corrupt"));
  } else {
    Event("nccl " + *value);
  }
  if (auto s = w.agent->WaitAtBarrier("step", absl::Seconds(20)); !s.ok()) {
    return Event("barrier " + Describe(s)), 1;
  }
  Event("barrier ok");
  absl::Status shutdown = w.agent->Shutdown();
  Event("shutdown " + Describe(shutdown));
  return shutdown.ok() ? 0 : 1;
}

int WaitError(Worker& w) {
  Event("ready");
  if (!w.error_seen.WaitForNotificationWithTimeout(
          absl::Milliseconds(absl::GetFlag(FLAGS_wait_ms)))) {
    return Event("no error"), 1;
  }
  absl::Status reset = w.agent->Reset();
  Event("reset " + Describe(reset));
  return 0;
}

int PendingGet(Worker& w) {
  absl::Notification got;
  absl::StatusOr<std::string> value;
  w.agent->GetKeyValueAsync("never/set", [&](const absl::StatusOr<std::string>& v) {
    value = v;
    got.Notify();
  });
  Event("ready");
  absl::Duration wait = absl::Milliseconds(absl::GetFlag(FLAGS_wait_ms));
  if (!got.WaitForNotificationWithTimeout(wait)) return Event("get still pending"), 1;
  Event("get " + Describe(value.status()));
  return w.error_seen.WaitForNotificationWithTimeout(wait) ? 0 : 1;
}

int Watch(Worker& w) {
  const int task = absl::GetFlag(FLAGS_task);
  std::atomic<int> events{0};
  absl::Notification three;
  if (task == 1) {
    auto s = w.agent->StartWatchKeyEvents("cfg", [&](const muster::proto::KeyValueChangeEvent& e) {
      Event(absl::StrCat("change ", muster::proto::KeyValueChangeEvent::Kind_Name(e.kind()), " ",
                         e.key(), "=", e.value(), " rev=", e.revision()));
      if (++events == 3) three.Notify();
    });
    if (!s.ok()) return Event("watch " + Describe(s)), 1;
  }
  if (!w.agent->WaitAtBarrier("watching", absl::Seconds(20)).ok()) return 1;
  if (task == 0) {
    if (!w.agent->InsertKeyValue("cfg/a", "1").ok()) return 1;
    if (!w.agent->UpdateKeyValue("cfg/a", "2").ok()) return 1;
    if (!w.agent->DeleteKeyValue("cfg/a").ok()) return 1;
  } else if (!three.WaitForNotificationWithTimeout(absl::Seconds(20))) {
    return Event("missing events"), 1;
  }
  return w.agent->WaitAtBarrier("watched", absl::Seconds(20)).ok() ? 0 : 1;
}

// Waits at barrier "done" of every task; once the other arrivals are in (all but one of
// --tasks), prints "at_barrier", then the barrier's outcome with the failed task it carries.
int BarrierWait(Worker& w) {
  absl::Notification done;
  absl::Status result;
  w.agent->WaitAtBarrierAsync("done", absl::Seconds(20), {}, [&](const absl::Status& s) {
    result = s;
    done.Notify();
  });
  const int others = absl::GetFlag(FLAGS_tasks) - 1;
  absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!done.HasBeenNotified()) {
    auto open = w.agent->GetBarrierProgress("done");
    if (open.ok() && open->arrived() >= others) break;
    if (absl::Now() > deadline) return Event("barrier never filled"), 1;
    absl::SleepFor(absl::Milliseconds(5));
  }
  Event("at_barrier");
  if (!done.WaitForNotificationWithTimeout(absl::Milliseconds(absl::GetFlag(FLAGS_wait_ms)))) {
    return Event("barrier still waiting"), 1;
  }
  std::optional<muster::proto::CoordinatedTask> failed = muster::FailedTaskOf(result);
  Event(absl::StrCat("barrier failed_task=", failed ? muster::TaskName(*failed) : "none", " ",
                     Describe(result)));
  return 0;
}

// Leaves at once: the shutdown barrier's outcome is the event.
int ShutdownNow(Worker& w) {
  absl::Status shutdown = w.agent->Shutdown();
  Event("shutdown " + Describe(shutdown));
  return 0;
}

// Requests the reference answers with an error: a job-state watch of an unknown job, and a
// second device exchange with other devices than the first (a one-task job).
int Probes(Worker& w) {
  auto watch = w.agent->WatchJobState("no_such_job");
  Event("watch_unknown " + Describe(watch.status()));
  const int task = absl::GetFlag(FLAGS_task);
  auto first = w.agent->WaitForAllTasks(LocalTopology(task));
  Event("topology_first " + Describe(first.status()));
  CoordinationServiceDeviceInfo other = LocalTopology(task);
  other.mutable_xla()->mutable_devices()->mutable_nodes(0)->add_devices();
  auto second = w.agent->WaitForAllTasks(other);
  Event("topology_other " + Describe(second.status()));
  auto same = w.agent->WaitForAllTasks(LocalTopology(task));
  Event("topology_same " + Describe(same.status()));
  return 0;
}

// Tasks 0 and 1 pass barrier "pair" (of the two of them); then this task, which is not one
// of them, calls the finished barrier with the same task list.
int Outsider(Worker& w) {
  const int task = absl::GetFlag(FLAGS_task);
  const std::string job = absl::GetFlag(FLAGS_job);
  std::vector<muster::proto::CoordinatedTask> pair = {muster::MakeTask(job, 0),
                                                      muster::MakeTask(job, 1)};
  if (task < 2) {
    absl::Status passed = w.agent->WaitAtBarrier("pair", absl::Seconds(20), pair);
    Event("pair " + Describe(passed));
    if (task == 0 && passed.ok()) (void)w.agent->InsertKeyValue("pair/passed", "yes");
  } else {
    auto passed = w.agent->GetKeyValue("pair/passed", absl::Seconds(20));
    if (!passed.ok()) return Event("pair not passed " + Describe(passed.status())), 1;
    Event("outsider " + Describe(w.agent->WaitAtBarrier("pair", absl::Seconds(20), pair)));
  }
  return w.agent->WaitAtBarrier("end", absl::Seconds(20)).ok() ? 0 : 1;
}

// Destroys the connected agent without Shutdown (shutdown_on_destruction = false) and keeps
// the process, and its connection to the leader, alive for --wait_ms: the leader must treat
// the task as lost although no connection broke.
int DropAgent(Worker& w) {
  Event(absl::StrCat("incarnation ", w.agent->incarnation()));
  w.agent.reset();
  Event("dropped");
  absl::SleepFor(absl::Milliseconds(absl::GetFlag(FLAGS_wait_ms)));
  Event("exiting");
  return 0;
}

// Starts a get of a key nobody writes and a barrier the other tasks never reach, then destroys
// the agent without Shutdown (shutdown_on_destruction = false): each callback must run exactly
// once, with Cancelled.
int DropPending(Worker& w) {
  std::atomic<int> gets{0}, barriers{0};
  absl::Notification got, passed;
  absl::Status get, barrier;
  w.agent->GetKeyValueAsync("never/written", [&](const absl::StatusOr<std::string>& v) {
    get = v.status();
    if (++gets == 1) got.Notify();
  });
  w.agent->WaitAtBarrierAsync("never_reached", absl::Seconds(60), {}, [&](const absl::Status& s) {
    barrier = s;
    if (++barriers == 1) passed.Notify();
  });
  // Both calls are at the leader once the barrier shows this task.
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!w.agent->GetBarrierProgress("never_reached").ok()) {
    if (absl::Now() > deadline) return Event("barrier never opened"), 1;
    absl::SleepFor(absl::Milliseconds(10));
  }
  Event("waiting");
  w.agent.reset();
  Event("dropped");
  absl::Duration wait = absl::Milliseconds(absl::GetFlag(FLAGS_wait_ms));
  Event(got.WaitForNotificationWithTimeout(wait) ? "get " + Describe(get) : "get still pending");
  Event(passed.WaitForNotificationWithTimeout(wait) ? "barrier " + Describe(barrier)
                                                    : "barrier still pending");
  absl::SleepFor(absl::Milliseconds(500));  // a second answer would come by now
  Event(absl::StrCat("answers get=", gets.load(), " barrier=", barriers.load()));
  return 0;
}

// Waits for the job to fail (the error callback), then shuts down: the agent is in ERROR.
int ErrorShutdown(Worker& w) {
  Event("ready");
  if (!w.error_seen.WaitForNotificationWithTimeout(
          absl::Milliseconds(absl::GetFlag(FLAGS_wait_ms)))) {
    return Event("no error"), 1;
  }
  Event("shutdown " + Describe(w.agent->Shutdown()));
  return 0;
}

// A recoverable task drops its agent (as a crashing task would), then rejoins in the same
// process as a new incarnation, meets its peer at a barrier and shuts down.
int DropRejoin(Worker& w, caf::actor_system& system, const muster::AgentOptions& options) {
  if (!w.agent->WaitAtBarrier("up", absl::Seconds(20)).ok()) return 1;
  uint64_t before = w.agent->incarnation();
  w.agent.reset();
  Event("dropped");
  auto again = muster::Agent::Create(system, options, [](const absl::Status& error) {
    Event("error after rejoin " + Describe(error));
  });
  if (!again.ok()) return 1;
  w.agent = std::move(*again);
  Event("rejoin " + Describe(w.agent->Connect()));
  Event(absl::StrCat("new_incarnation ", w.agent->incarnation() != before));
  Event("rejoined " + Describe(w.agent->WaitAtBarrier("rejoined", absl::Seconds(20))));
  Event("shutdown " + Describe(w.agent->Shutdown()));
  return 0;
}

// The peer of drop_rejoin: meets it before and after, and must see no error in between.
int RejoinPeer(Worker& w) {
  if (!w.agent->WaitAtBarrier("up", absl::Seconds(20)).ok()) return 1;
  Event("rejoined " + Describe(w.agent->WaitAtBarrier("rejoined", absl::Seconds(20))));
  Event(absl::StrCat("errors_seen ", w.error_seen.HasBeenNotified()));
  Event("shutdown " + Describe(w.agent->Shutdown()));
  return 0;
}

// The XLA runtime client: connect (all nodes), enumerate devices, share a value, barrier,
// shut down.
int Xla(caf::actor_system& system) {
  const int node = absl::GetFlag(FLAGS_task);
  auto client = muster::DistributedRuntimeClient::Create(
      system, {.leader = absl::GetFlag(FLAGS_leader),
               .job_name = absl::GetFlag(FLAGS_job),
               .node_id = node,
               .init_timeout = absl::Seconds(20),
               .heartbeat_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_heartbeat_timeout_ms)),
               .shutdown_timeout = absl::Seconds(20)});
  if (!client.ok()) return Event("xla create " + Describe(client.status())), 1;
  if (auto s = (*client)->Connect(); !s.ok()) return Event("xla connect " + Describe(s)), 1;
  muster::proto::LocalTopologyProto local;
  for (int d = 0; d < 3; ++d) local.add_devices()->set_local_device_ordinal(d);
  auto global = (*client)->EnumerateDevices(local);
  if (!global.ok()) return Event("xla enumerate " + Describe(global.status())), 1;
  std::string ids;
  for (const auto& d : global->nodes(node).devices())
    absl::StrAppend(&ids, d.global_device_id(), ",");
  Event(absl::StrCat("xla nodes=", global->nodes_size(), " mine=", ids));
  if (node == 0 && !(*client)->KeyValueSet("xla/coordinator", "node0").ok()) return 1;
  auto value = (*client)->KeyValueGet("xla/coordinator", absl::Seconds(20));
  Event("xla get " + (value.ok() ? *value : Describe(value.status())));
  auto now = (*client)->KeyValueTryGet("xla/coordinator");
  Event("xla try_get " + (now.ok() ? *now : Describe(now.status())));
  Event("xla try_get_missing " + Describe((*client)->KeyValueTryGet("xla/missing").status()));
  std::vector<int> all_nodes;
  for (int n = 0; n < global->nodes_size(); ++n) all_nodes.push_back(n);
  auto live = (*client)->GetLiveNodesWithIncarnations(all_nodes);
  if (!live.ok()) return Event("xla live " + Describe(live.status())), 1;
  std::string nodes;
  for (const auto& [id, incarnation] : *live) {
    absl::StrAppend(&nodes, id, incarnation != 0 ? "+" : "-", ",");
  }
  Event(absl::StrCat("xla live=", nodes,
                     " mine_matches=", live->at(node) == (*client)->agent().incarnation()));
  if (!(*client)->WaitAtBarrier("xla_step", absl::Seconds(20)).ok()) return 1;
  absl::Status shutdown = (*client)->Shutdown();
  Event("xla shutdown " + Describe(shutdown));
  return shutdown.ok() ? 0 : 1;
}

// The XLA client connects (every node), then shuts down: at once, or (wait_error) once its
// missed_heartbeat_callback reported that the job failed.
int XlaShutdown(caf::actor_system& system, bool wait_error) {
  absl::Notification failed;
  auto client = muster::DistributedRuntimeClient::Create(
      system, {.leader = absl::GetFlag(FLAGS_leader),
               .job_name = absl::GetFlag(FLAGS_job),
               .node_id = absl::GetFlag(FLAGS_task),
               .init_timeout = absl::Seconds(20),
               .heartbeat_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_heartbeat_timeout_ms)),
               .shutdown_timeout = absl::Seconds(20),
               .missed_heartbeat_callback = [&failed](const absl::Status& error) {
                 Event("xla error " + Describe(error));
                 failed.Notify();
               }});
  if (!client.ok()) return Event("xla create " + Describe(client.status())), 1;
  if (auto s = (*client)->Connect(); !s.ok()) return Event("xla connect " + Describe(s)), 1;
  Event("xla ready");
  if (wait_error &&
      !failed.WaitForNotificationWithTimeout(absl::Milliseconds(absl::GetFlag(FLAGS_wait_ms)))) {
    return Event("xla no error"), 1;
  }
  Event("xla shutdown " + Describe((*client)->Shutdown()));
  return 0;
}

// Several tasks in this process, heartbeating through one batcher and meeting at barriers
// through one combiner: connect them all, pass a barrier of every task of the job, stay up for
// three heartbeat timeouts, report every task's state at the leader, then wait for an error.
int Batched(caf::actor_system& system, absl::Duration heartbeat) {
  const int first = absl::GetFlag(FLAGS_task);
  auto batcher = muster::SpawnHeartbeatBatcher(system);
  auto combiner = muster::SpawnBarrierCombiner(system);
  std::vector<std::unique_ptr<muster::Agent>> agents;
  absl::Notification error_seen;
  for (int task = first; task < first + absl::GetFlag(FLAGS_local_tasks); ++task) {
    auto agent = muster::Agent::Create(
        system,
        {.leader = absl::GetFlag(FLAGS_leader),
         .job_name = absl::GetFlag(FLAGS_job),
         .task_id = task,
         .heartbeat_timeout = heartbeat,
         .register_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_register_timeout_ms)),
         .heartbeat_batcher = batcher,
         .barrier_combiner = combiner},
        [&error_seen, task](const absl::Status& error) {
          Event(absl::StrCat("error task=", task, " at_us=", NowMicros(), " ", Describe(error)));
          error_seen.Notify();
        });
    if (!agent.ok()) return Event("create " + Describe(agent.status())), 1;
    if (auto s = (*agent)->Connect(); !s.ok()) return Event("connect " + Describe(s)), 1;
    agents.push_back(std::move(*agent));
  }
  Event("ready");
  std::atomic<int> passed{0};
  absl::Notification all_passed;
  for (auto& agent : agents) {
    agent->WaitAtBarrierAsync("grouped", absl::Seconds(20), {}, [&](const absl::Status& s) {
      if (!s.ok()) Event("barrier " + Describe(s));
      if (s.ok() && ++passed == static_cast<int>(agents.size())) all_passed.Notify();
    });
  }
  if (!all_passed.WaitForNotificationWithTimeout(absl::Seconds(20))) return 1;
  Event(absl::StrCat("barrier passed by ", passed.load(), " tasks"));
  absl::SleepFor(3 * heartbeat);
  std::vector<muster::proto::CoordinatedTask> all;
  for (int task = 0; task < absl::GetFlag(FLAGS_tasks); ++task) {
    all.push_back(muster::MakeTask(absl::GetFlag(FLAGS_job), task));
  }
  auto states = agents.front()->GetTaskState(all);
  if (!states.ok()) return Event("states " + Describe(states.status())), 1;
  std::string names;
  for (const auto& state : *states) {
    absl::StrAppend(&names, muster::proto::CoordinatedTaskState_Name(state.state()), ",");
  }
  Event("states " + names);
  bool failed =
      error_seen.WaitForNotificationWithTimeout(absl::Milliseconds(absl::GetFlag(FLAGS_wait_ms)));
  if (!failed) Event("no error");
  agents.clear();
  return failed ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_scenario) == "xla") {
    muster::NodeConfig cfg(muster::WorkerNodeOptions(absl::Seconds(10)));
    caf::actor_system system{cfg};
    return Xla(system);
  }
  if (absl::GetFlag(FLAGS_scenario) == "xla_shutdown" ||
      absl::GetFlag(FLAGS_scenario) == "xla_error_shutdown") {
    muster::NodeConfig cfg(muster::WorkerNodeOptions(absl::Seconds(10)));
    caf::actor_system system{cfg};
    return XlaShutdown(system, absl::GetFlag(FLAGS_scenario) == "xla_error_shutdown");
  }
  absl::Duration heartbeat = absl::Milliseconds(absl::GetFlag(FLAGS_heartbeat_timeout_ms));
  muster::NodeOptions node = muster::WorkerNodeOptions(heartbeat);
  if (int64_t ms = absl::GetFlag(FLAGS_connection_timeout_ms); ms > 0) {
    node.connection_timeout = std::chrono::milliseconds(ms);
  }
  muster::NodeConfig cfg(node);
  caf::actor_system system{cfg};
  if (absl::GetFlag(FLAGS_scenario) == "batched") return Batched(system, heartbeat);
  Worker w;
  muster::AgentOptions options{
      .leader = absl::GetFlag(FLAGS_leader),
      .job_name = absl::GetFlag(FLAGS_job),
      .task_id = absl::GetFlag(FLAGS_task),
      .recoverable = absl::GetFlag(FLAGS_recoverable),
      .register_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_register_timeout_ms))};
  if (heartbeat > absl::ZeroDuration()) options.heartbeat_timeout = heartbeat;
  if (!absl::GetFlag(FLAGS_token_file).empty()) {
    auto token = muster::ReadTokenFile(absl::GetFlag(FLAGS_token_file));
    if (!token.ok()) return Event("token " + Describe(token.status())), 1;
    options.token = *token;
  }
  const std::string scenario = absl::GetFlag(FLAGS_scenario);
  options.shutdown_on_destruction =
      scenario != "drop_agent" && scenario != "drop_rejoin" && scenario != "drop_pending";
  auto agent = muster::Agent::Create(system, options, [&w](const absl::Status& error) {
    Event(absl::StrCat("error at_us=", NowMicros(), " ", Describe(error)));
    w.error_seen.Notify();
  });
  if (!agent.ok()) return Event("create " + Describe(agent.status())), 1;
  w.agent = std::move(*agent);
  absl::Status connected = w.agent->Connect();
  Event("connect " + Describe(connected));
  if (!connected.ok()) return 1;
  if (scenario == "exit_without_shutdown") std::_Exit(0);  // like a crash right after registering
  int code = scenario == "full"             ? Full(w)
             : scenario == "wait_error"     ? WaitError(w)
             : scenario == "pending_get"    ? PendingGet(w)
             : scenario == "watch"          ? Watch(w)
             : scenario == "shutdown"       ? ShutdownNow(w)
             : scenario == "probes"         ? Probes(w)
             : scenario == "outsider"       ? Outsider(w)
             : scenario == "drop_agent"     ? DropAgent(w)
             : scenario == "drop_rejoin"    ? DropRejoin(w, system, options)
             : scenario == "rejoin_peer"    ? RejoinPeer(w)
             : scenario == "barrier_wait"   ? BarrierWait(w)
             : scenario == "drop_pending"   ? DropPending(w)
             : scenario == "error_shutdown" ? ErrorShutdown(w)
                                            : 0;
  w.agent.reset();
  return code;
}
