// A worker for the leader-restart multi-process tests: an agent with leader_reconnect_timeout,
// so that a leader killed and restarted on its state dir is a pause. It prints one line per
// event ("EVENT <what> ...").
//   get      GetKeyValue(boot/key), then the barrier "meet", then Shutdown
//   barrier  the barrier "meet", then Shutdown
//   put      InsertKeyValue(--key, --value) without registering, then exit
//   read     TryGetKeyValue(--key) without registering, then exit
//   idle     wait for the error callback (up to 60 s)
//   loss     for --duration_ms: insert loss/c<task>/<n> = v<n>, then increment loss/n/c<task>;
//            prints how many of each were acknowledged and how many calls failed; with
//            --history, also each acknowledgement ("EVENT ack insert n=N at_us=T", "EVENT ack
//            increment sum=S at_us=T")
//   check    for tasks 0..--clients-1: how many loss/c<i>/ keys hold the right value, and the
//            counter loss/n/c<i>
//   ephemeral  insert the ephemeral key eph/<task> (its incarnation as the value), then
//            GetKeyValue(go/<task>) (completed after a leader restart only once the agent has
//            registered again), then wait to be killed
// Exit code 0 when the scenario ran as written and no error callback fired, 1 otherwise.
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/status/status.h>
#include <absl/strings/str_cat.h>
#include <absl/synchronization/notification.h>
#include <absl/time/clock.h>
#include <caf/actor_system.hpp>

#include "muster/net/agent/agent.h"
#include "tests/e2e/programs/worker_events.h"

ABSL_FLAG(std::string, leader, "127.0.0.1:7400", "leader HOST:PORT");
ABSL_FLAG(int, task, 0, "task id of job worker");
ABSL_FLAG(std::string, scenario, "get", "get, barrier, put, read, idle, loss, check or ephemeral");
ABSL_FLAG(int64_t, heartbeat_timeout_ms, 2'000, "heartbeat timeout");
ABSL_FLAG(int64_t, reconnect_timeout_ms, 20'000, "leader_reconnect_timeout");
ABSL_FLAG(std::string, key, "boot/key", "put, read: the key");
ABSL_FLAG(std::string, value, "v", "put: the value");
ABSL_FLAG(int64_t, duration_ms, 5'000, "loss: how long to write");
ABSL_FLAG(int, clients, 8, "check: how many loss clients wrote");
ABSL_FLAG(bool, history, false, "loss: print each acknowledgement with its time");
ABSL_FLAG(bool, direct_calls, true, "make key-value calls directly when the leader offers it");

namespace {

using ::muster::testing::Describe;
using ::muster::testing::Event;
using ::muster::testing::NowMicros;

int Finish(muster::Agent& agent, bool ok) {
  absl::Status shutdown = agent.Shutdown();
  Event("shutdown " + Describe(shutdown));
  return ok && shutdown.ok() ? 0 : 1;
}

int Get(muster::Agent& agent) {
  Event("waiting get");
  auto value = agent.GetKeyValue("boot/key", absl::Seconds(60));
  Event(value.ok() ? "got value=" + *value : "got " + Describe(value.status()));
  if (!value.ok()) return 1;
  absl::Status barrier = agent.WaitAtBarrier("meet", absl::Seconds(60));
  Event("barrier " + Describe(barrier));
  return Finish(agent, barrier.ok());
}

int Barrier(muster::Agent& agent) {
  Event("waiting barrier");
  absl::Status barrier = agent.WaitAtBarrier("meet", absl::Seconds(60));
  Event("barrier " + Describe(barrier));
  return Finish(agent, barrier.ok());
}

int Loss(muster::Agent& agent) {
  const std::string task = absl::StrCat(absl::GetFlag(FLAGS_task));
  const absl::Time end = absl::Now() + absl::Milliseconds(absl::GetFlag(FLAGS_duration_ms));
  const bool history = absl::GetFlag(FLAGS_history);
  int64_t inserts = 0, increments = 0, failures = 0;
  for (int64_t n = 0; absl::Now() < end; ++n) {
    absl::Status inserted =
        agent.InsertKeyValue(absl::StrCat("loss/c", task, "/", n), absl::StrCat("v", n));
    if (inserted.ok()) {
      ++inserts;
      if (history) Event(absl::StrCat("ack insert n=", n, " at_us=", NowMicros()));
    } else {
      ++failures;
      Event("insert " + Describe(inserted));
      break;
    }
    auto sum = agent.IncrementKeyValue(absl::StrCat("loss/n/c", task), 1);
    if (sum.ok() && *sum == increments + 1) {
      ++increments;
      if (history) Event(absl::StrCat("ack increment sum=", *sum, " at_us=", NowMicros()));
    } else {
      ++failures;
      Event(sum.ok() ? absl::StrCat("increment returned ", *sum, " after ", increments)
                     : "increment " + Describe(sum.status()));
      break;
    }
  }
  Event(absl::StrCat("done inserts=", inserts, " increments=", increments, " failures=", failures));
  return Finish(agent, failures == 0);
}

int Check(muster::Agent& agent) {
  bool ok = true;
  for (int client = 0; client < absl::GetFlag(FLAGS_clients); ++client) {
    auto entries = agent.GetKeyValueDir(absl::StrCat("loss/c", client));
    if (!entries.ok()) return Event("dir " + Describe(entries.status())), 1;
    int64_t right = 0;
    for (const muster::proto::KeyValueEntry& entry : *entries) {
      std::string n = entry.key().substr(entry.key().rfind('/') + 1);
      right += entry.value() == "v" + n;
    }
    auto counter = agent.TryGetKeyValue(absl::StrCat("loss/n/c", client));
    Event(absl::StrCat("check client=", client, " keys=", entries->size(), " right=", right,
                       " counter=", counter.ok() ? *counter : "absent"));
    ok &= counter.ok();
  }
  return ok ? 0 : 1;
}

int Ephemeral(muster::Agent& agent) {
  const std::string task = absl::StrCat(absl::GetFlag(FLAGS_task));
  absl::Status inserted =
      agent.InsertKeyValue(absl::StrCat("eph/", task), absl::StrCat(agent.incarnation()),
                           muster::KvWriteOptions{.ephemeral = true});
  Event(absl::StrCat("inserted ", Describe(inserted), " incarnation=", agent.incarnation()));
  if (!inserted.ok()) return 1;
  auto go = agent.GetKeyValue(absl::StrCat("go/", task), absl::Seconds(60));
  Event(go.ok() ? "go" : "go " + Describe(go.status()));
  absl::SleepFor(absl::Seconds(60));  // until the test kills this process
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::Duration heartbeat = absl::Milliseconds(absl::GetFlag(FLAGS_heartbeat_timeout_ms));
  muster::NodeConfig cfg(muster::WorkerNodeOptions(heartbeat));
  caf::actor_system system{cfg};
  std::atomic<bool> error_seen{false};
  absl::Notification error_notified;
  muster::AgentOptions options{.leader = absl::GetFlag(FLAGS_leader),
                               .job_name = "worker",
                               .task_id = absl::GetFlag(FLAGS_task),
                               .heartbeat_timeout = heartbeat,
                               .register_timeout = absl::Seconds(20)};
  options.leader_reconnect_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_reconnect_timeout_ms));
  options.direct_calls = absl::GetFlag(FLAGS_direct_calls);
  auto agent = muster::Agent::Create(system, options, [&](const absl::Status& error) {
    Event(absl::StrCat("error at_us=", NowMicros(), " ", Describe(error)));
    error_seen = true;
    if (!error_notified.HasBeenNotified()) error_notified.Notify();
  });
  if (!agent.ok()) return Event("create " + Describe(agent.status())), 1;
  const std::string scenario = absl::GetFlag(FLAGS_scenario);
  if (scenario == "put") {
    absl::Status put =
        (*agent)->InsertKeyValue(absl::GetFlag(FLAGS_key), absl::GetFlag(FLAGS_value));
    Event("put " + Describe(put));
    return put.ok() ? 0 : 1;
  }
  if (scenario == "read") {
    auto value = (*agent)->TryGetKeyValue(absl::GetFlag(FLAGS_key));
    Event(value.ok() ? "read value=" + *value : "read " + Describe(value.status()));
    return value.ok() || absl::IsNotFound(value.status()) ? 0 : 1;
  }
  if (scenario == "check") return Check(**agent);
  absl::Status connected = (*agent)->Connect();
  Event("connect " + Describe(connected));
  if (!connected.ok()) return 1;
  int code = 2;
  if (scenario == "get") code = Get(**agent);
  if (scenario == "barrier") code = Barrier(**agent);
  if (scenario == "loss") code = Loss(**agent);
  if (scenario == "ephemeral") return Ephemeral(**agent);
  if (scenario == "idle") {
    code = error_notified.WaitForNotificationWithTimeout(absl::Seconds(60)) ? 0 : 1;
    return code;  // the error was the point
  }
  return error_seen ? 1 : code;
}
