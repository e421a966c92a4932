// A complete Muster worker task: connects to the leader, exchanges device topology, shares a
// bootstrap value through a blocking get, meets the other tasks at a barrier, and leaves the
// job together with them. A failure anywhere in the job reaches the error callback within
// milliseconds.
//
// Run:   ./build/tools/muster serve --job worker=2 --recoverable-job worker --port 7400
// Then:  ./build/examples/worker --leader=127.0.0.1:7400 --task=0 --hold
//        ./build/examples/worker --leader=127.0.0.1:7400 --task=1 --hold
// A task stopped with Ctrl-C comes back by running its line again: its job is recoverable, so
// it registers as a new incarnation, finds the bootstrap value and the other tasks past the
// barrier, and rejoins them (without --recoverable-job the leader shares the failure with
// every task instead, and the job has to be started again).
// Or all of it, restarting what fails:
//        ./build/tools/muster run --job worker=4 --restart one-for-all -- ./build/examples/worker
// (flags that are not given come from the launcher's environment: MUSTER_LEADER, MUSTER_JOB,
// MUSTER_TASK; or srun's, mpirun's, torchrun's, a Kubernetes indexed Job's: docs/agent.md)
//
// --hold=true keeps a worker in the job after the barrier until an error arrives, until Ctrl-C,
// or for --hold_timeout if one is given (then it leaves the job cleanly).
//
// Exit status: 0 when the job completed and this task shut down cleanly (also after a
// --hold_timeout without an error); 130 after Ctrl-C (the leader sees a lost task); 1 when this
// task failed (connect, exchange, bootstrap, barrier or shutdown); 2 when it left a job that
// another task's failure ended (so a supervisor sees that the job did not complete).
#include <cstdio>
#include <string>

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
#include "muster/net/process/cluster/cluster_environment.h"
#include "muster/net/process/launch_environment.h"

ABSL_FLAG(std::string, leader, "",
          "Leader address HOST:PORT (default: the launcher's or cluster's, e.g. $MUSTER_LEADER "
          "under muster run, the step's first node under srun; else 127.0.0.1:7400)");
ABSL_FLAG(std::string, job, "",
          "Job name of this task (default: the launcher's, e.g. $MUSTER_JOB; else worker)");
ABSL_FLAG(int, task, -1,
          "Task id of this task (default: the launcher's, e.g. $MUSTER_TASK or $SLURM_PROCID; "
          "else 0)");
ABSL_FLAG(int, devices, 2, "Local devices this task reports");
ABSL_FLAG(absl::Duration, heartbeat_timeout, absl::ZeroDuration(),
          "The agent's heartbeat timeout (0: the leader's; at most the leader's)");
ABSL_FLAG(absl::Duration, connect_timeout, absl::Seconds(30), "Give up connecting after this");
ABSL_FLAG(bool, recoverable, false, "This task may fail and rejoin");
ABSL_FLAG(bool, hold, false,
          "After the barrier, stay in the job until an error arrives or Ctrl-C, instead of "
          "shutting down");
ABSL_FLAG(absl::Duration, hold_timeout, absl::InfiniteDuration(),
          "With --hold: leave the job cleanly after this long without an error (default inf: "
          "until Ctrl-C)");

namespace {

std::string self_name;  // this task's name, the prefix of every line

void Say(const std::string& text) {
  std::printf("%s %s at_us=%lld\n", self_name.c_str(), text.c_str(),
              static_cast<long long>(absl::ToUnixMicros(absl::Now())));
  std::fflush(stdout);
}

int Fail(absl::string_view step, const absl::Status& status) {
  Say(absl::StrCat(step, " failed: ", muster::StatusText(status)));
  return 1;
}

muster::proto::CoordinationServiceDeviceInfo LocalDevices(int task, int count) {
  muster::proto::CoordinationServiceDeviceInfo info;
  auto* node = info.mutable_xla()->mutable_devices()->add_nodes();
  node->set_node_id(task);
  for (int d = 0; d < count; ++d) {
    auto* device = node->add_devices();
    device->set_local_device_ordinal(d);
    device->set_name(absl::StrCat("gpu:", d));
  }
  return info;
}

// Connects, exchanges topology, shares the bootstrap value and meets at the barrier.
int RunJob(muster::Agent& agent, int task) {
  if (auto s = agent.Connect(); !s.ok()) return Fail("connect", s);
  Say("registered");
  auto cluster = agent.WaitForAllTasks(LocalDevices(task, absl::GetFlag(FLAGS_devices)));
  if (!cluster.ok()) return Fail("topology exchange", cluster.status());
  for (const auto& node : cluster->xla().devices().nodes()) {
    if (node.node_id() != task) continue;
    std::string ids;
    for (const auto& d : node.devices())
      absl::StrAppend(&ids, ids.empty() ? "" : ",", d.global_device_id());
    Say(absl::StrCat("topology: ", cluster->xla().devices().nodes_size(),
                     " processes, my global device ids ", ids));
  }
  // Task 0 publishes the bootstrap value; the others block until it exists. A task 0 that runs
  // again (a rejoin, a second run against the same leader) publishes it again.
  if (task == 0) {
    if (auto s = agent.InsertKeyValue("nccl/unique_id", "nccl-id-0xC0FFEE",
                                      /*allow_overwrite=*/true);
        !s.ok()) {
      return Fail("publish bootstrap value", s);
    }
    Say("published nccl/unique_id");
  } else {
    auto id = agent.GetKeyValue("nccl/unique_id", absl::Seconds(30));
    if (!id.ok()) return Fail("bootstrap get", id.status());
    Say(absl::StrCat("got nccl/unique_id=", *id));
  }
  // A task that passed the barrier says so with a key of its incarnation (the leader deletes it
  // when the task leaves or fails). Finding another task's key, this task rejoins a running job:
  // the others will not come to the barrier again.
  auto passed = agent.GetKeyValueDir("ready_to_train");
  if (!passed.ok()) return Fail("read ready_to_train", passed.status());
  if (passed->empty()) {
    if (auto s = agent.WaitAtBarrier("ready_to_train", absl::Seconds(30)); !s.ok()) {
      return Fail("barrier", s);
    }
    Say("passed barrier ready_to_train");
  } else {
    Say(absl::StrCat("rejoined: ", passed->size(),
                     " other task(s) passed barrier ready_to_train already"));
  }
  if (auto s = agent.InsertKeyValue(absl::StrCat("ready_to_train/", task), "passed",
                                    {.allow_overwrite = true, .ephemeral = true});
      !s.ok()) {
    return Fail("record ready_to_train", s);
  }
  return 0;
}

// --hold: stays until the error callback fires (exit 2), Ctrl-C, or --hold_timeout (exit 0).
int Hold(muster::Agent& agent, absl::Notification& failed) {
  const absl::Duration bound = absl::GetFlag(FLAGS_hold_timeout);
  if (bound == absl::InfiniteDuration()) {
    Say("holding until Ctrl-C or an error from the leader");
    failed.WaitForNotification();
  } else {
    Say(absl::StrCat("holding for ", absl::FormatDuration(bound),
                     " (--hold_timeout) or until Ctrl-C or an error from the leader"));
    if (!failed.WaitForNotificationWithTimeout(bound)) {
      absl::Status shutdown = agent.Shutdown();
      if (!shutdown.ok()) return Fail("shutdown", shutdown);
      Say(absl::StrCat("no error within ", absl::FormatDuration(bound), "; shut down"));
      return 0;
    }
  }
  absl::Status shutdown = agent.Shutdown();  // in ERROR: FailedPrecondition, as documented
  Say(absl::StrCat("left the failed job: ", muster::StatusText(shutdown)));
  return 2;
}

// --leader, --job and --task; what is not given comes from the launcher or cluster this process
// runs under (muster run, torchrun, srun, mpirun, a Kubernetes indexed Job), if any.
absl::StatusOr<muster::LaunchIdentity> Identity() {
  muster::LaunchIdentity identity{.leader = absl::GetFlag(FLAGS_leader),
                                  .job = absl::GetFlag(FLAGS_job),
                                  .task_id = absl::GetFlag(FLAGS_task)};
  if (identity.leader.empty() || identity.job.empty() || identity.task_id < 0) {
    auto placement = muster::DetectClusterFromEnvironment();
    if (!placement.ok()) return placement.status();
    if (*placement) {
      const muster::ClusterPlacement& p = **placement;
      // muster run says who each task is itself; other launchers are named once here.
      if (p.source != "muster run") {
        std::fprintf(stderr, "worker: %s\n", muster::PlacementText(p).c_str());
      }
      if (identity.leader.empty()) identity.leader = p.leader;
      if (identity.job.empty()) identity.job = p.job;
      if (identity.task_id < 0) identity.task_id = p.task_id;
    }
  }
  if (identity.leader.empty()) identity.leader = "127.0.0.1:7400";
  if (identity.job.empty()) identity.job = "worker";
  if (identity.task_id < 0) identity.task_id = 0;
  return identity;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Duration heartbeat = absl::GetFlag(FLAGS_heartbeat_timeout);
  muster::NodeConfig cfg(muster::WorkerNodeOptions(heartbeat));
  caf::actor_system system{cfg};
  // A spare of `muster run --spares` has no task yet: it waits here until it is given one.
  if (auto spare = muster::Agent::TakeSpareAssignment(system); !spare.ok()) {
    std::fprintf(stderr, "worker: %s\n", std::string(spare.status().message()).c_str());
    return 1;
  }
  auto identity = Identity();
  if (!identity.ok()) {
    std::fprintf(stderr, "worker: %s\n", std::string(identity.status().message()).c_str());
    return 1;
  }
  const int task = identity->task_id;
  self_name = muster::TaskName(muster::MakeTask(identity->job, task));

  absl::Notification failed;
  auto agent =
      muster::Agent::Create(system,
                            {.leader = identity->leader,
                             .job_name = identity->job,
                             .task_id = task,
                             .recoverable = absl::GetFlag(FLAGS_recoverable),
                             .heartbeat_timeout = heartbeat,
                             .register_timeout = absl::GetFlag(FLAGS_connect_timeout)},
                            [&failed](const absl::Status& error) {
                              // Runs on the agent's thread: record and return, never block
                              // here.
                              Say(absl::StrCat("error callback: ", muster::StatusText(error)));
                              if (!failed.HasBeenNotified()) failed.Notify();
                            });
  if (!agent.ok()) return Fail("create agent", agent.status());

  if (int code = RunJob(**agent, task); code != 0) return code;
  if (absl::GetFlag(FLAGS_hold)) return Hold(**agent, failed);
  absl::Status shutdown = (*agent)->Shutdown();
  if (!shutdown.ok()) return Fail("shutdown", shutdown);
  Say("shut down");
  return 0;
}
