// Many Muster tasks in one client process: each task is an actor with its own agent actor and
// at most one request in flight; a collector actor gathers their results for the main thread.
// Workloads: barriers, bring-up (register + WaitForAllTasks), heartbeats, failure reports.
#include <algorithm>
#include <climits>
#include <string>
#include <thread>
#include <vector>

#include <absl/strings/match.h>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "muster/actors/caf/placement.h"
#include "muster/bench/harness.h"
#include "muster/bench/muster_bench.h"
#include "muster/messages/incarnation.h"
#include "muster/messages/requests/barrier_requests.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/per_process/barrier_combiner_actor.h"
#include "muster/net/agent/per_process/heartbeat_batcher_actor.h"

namespace muster::bench {
namespace {

using Results = std::vector<std::vector<int64_t>>;
constexpr auto kRequestTimeout = std::chrono::seconds(120);

[[noreturn]] void Die(const caf::error& error) {
  std::fprintf(stderr, "muster_bench task: %s\n", ToStatus(error).ToString().c_str());
  std::_Exit(1);
}

struct CollectorState {
  size_t expected = 0;
  Results results;
  caf::response_promise promise;
  bool asked = false;
};

void MaybeDeliver(caf::stateful_actor<CollectorState>* self) {
  auto& st = self->state;
  if (st.asked && st.results.size() == st.expected) st.promise.deliver(std::move(st.results));
}

// Gathers one (done_atom, values) per task; answers run_atom once all `expected` arrived.
caf::behavior Collector(caf::stateful_actor<CollectorState>* self, size_t expected) {
  self->state.expected = expected;
  return {
      [=](done_atom, std::vector<int64_t>& values) {
        self->state.results.push_back(std::move(values));
        MaybeDeliver(self);
      },
      [=](run_atom) {
        self->state.promise = self->make_response_promise();
        self->state.asked = true;
        MaybeDeliver(self);
        return self->state.promise;
      },
  };
}

Results Collect(caf::actor_system& system, const caf::actor& collector) {
  Results results;
  caf::scoped_actor self{system};
  self->request(collector, caf::infinite, run_atom::value)
      .receive([&](Results& all) { results = std::move(all); },
               [](caf::error& error) { Die(error); });
  return results;
}

// The agent of a task: forwards the arrival time of a pushed error to `sink` (if any); with
// `hosted`, on the network thread (actors/caf/placement.h).
AgentActor::behavior_type Agent(AgentActor::pointer self, caf::actor sink, bool hosted) {
  if (hosted) HostOnNetworkThread(self);
  return {[=](const proto::ReportErrorToTaskRequest&) {
            if (sink) caf::anon_send(sink, report_atom::value, ClockNs(self->clock().now()));
          },
          [](const proto::PreemptionNotice&) { return proto::PreemptionAck(); },
          [](const proto::SyncPointNotice&) {}, [](const proto::MembershipNotice&) {}};
}

struct TaskState {
  CoordinatorActor leader;
  HeartbeatBatcherActor batcher;  // heartbeats go through it when set
  BarrierCombinerActor combiner;  // barrier calls go through it when set
  proto::CoordinatedTask task;
  uint64_t incarnation = 0;
  caf::actor collector;
  std::vector<int64_t> values;
  int64_t ok = 0, errors = 0;
  bool oneway = false;  // beats are sent unanswered (counted as sent)
};
using TaskPointer = caf::stateful_actor<TaskState>*;

void InitTask(TaskPointer self, CoordinatorActor leader, int64_t id, caf::actor collector) {
  self->state.leader = std::move(leader);
  self->state.task = MakeTask("worker", static_cast<int>(id));
  self->state.incarnation = NewIncarnation();
  self->state.collector = std::move(collector);
}

void Done(TaskPointer self) {
  self->send(self->state.collector, done_atom::value, std::move(self->state.values));
}

// Registers the task with `agent`, then calls `next`.
template <class Next>
void Register(TaskPointer self, const AgentActor& agent, Next next) {
  proto::RegisterTaskRequest request;
  *request.mutable_source_task() = self->state.task;
  request.set_incarnation(self->state.incarnation);
  self->request(self->state.leader, kRequestTimeout, request, agent)
      .then([=](const proto::RegisterTaskResponse&) { next(); }, [](caf::error& e) { Die(e); });
}

void WaitForAll(TaskPointer self) {
  proto::WaitForAllTasksRequest request;
  *request.mutable_source_task() = self->state.task;
  self->request(self->state.leader, kRequestTimeout, request)
      .then(
          [=](const proto::WaitForAllTasksResponse&) {
            self->state.values.push_back(ClockNs(self->clock().now()));
            Done(self);
          },
          [](caf::error& e) { Die(e); });
}

// Barrier rounds 0..rounds-1, re-entering as soon as released; values: send, release per round.
void EnterBarrier(TaskPointer self, int64_t round, int64_t rounds) {
  if (round == rounds) return Done(self);
  proto::BarrierRequest request = requests::Barrier("bench", absl::Seconds(60));
  *request.mutable_source_task() = self->state.task;
  request.set_counter(round);
  self->state.values.push_back(ClockNs(self->clock().now()));
  auto released = [=](const proto::BarrierResponse&) {
    self->state.values.push_back(ClockNs(self->clock().now()));
    EnterBarrier(self, round + 1, rounds);
  };
  if (self->state.combiner) {
    self->request(self->state.combiner, kRequestTimeout, request, self->state.leader)
        .then(released, [](caf::error& e) { Die(e); });
  } else {
    self->request(self->state.leader, kRequestTimeout, request).then(released, [](caf::error& e) {
      Die(e);
    });
  }
}

// Barrier rounds through `combiner` when it is set.
caf::behavior BarrierTask(TaskPointer self, CoordinatorActor leader, int64_t id, int64_t rounds,
                          BarrierCombinerActor combiner, caf::actor collector) {
  InitTask(self, std::move(leader), id, std::move(collector));
  self->state.combiner = std::move(combiner);
  return {[=](go_atom) { EnterBarrier(self, 0, rounds); }};
}

// Registers, then waits for all tasks; values: the release time.
caf::behavior BringupTask(TaskPointer self, CoordinatorActor leader, int64_t id, AgentActor agent,
                          caf::actor collector) {
  InitTask(self, std::move(leader), id, std::move(collector));
  Register(self, agent, [=] { WaitForAll(self); });
  return {[](go_atom) {}};
}

void Beat(TaskPointer self, caf::actor_clock::time_point end) {
  if (self->clock().now() >= end) {
    self->state.values = {self->state.ok, self->state.errors};
    return Done(self);
  }
  proto::HeartbeatRequest request;
  *request.mutable_source_task() = self->state.task;
  request.set_incarnation(self->state.incarnation);
  auto on_ok = [=](const proto::HeartbeatResponse&) { ++self->state.ok; };
  auto on_error = [=](caf::error&) { ++self->state.errors; };
  if (self->state.oneway) {
    self->send(caf::actor_cast<caf::actor>(self->state.leader), request);
    ++self->state.ok;
  } else if (self->state.batcher) {
    self->request(self->state.batcher, std::chrono::seconds(5), request, self->state.leader)
        .then(on_ok, on_error);
  } else {
    self->request(self->state.leader, std::chrono::seconds(5), request).then(on_ok, on_error);
  }
  self->delayed_send(self, std::chrono::seconds(1), caf::tick_atom::value, end);
}

// The floor's registration (muster_floor.cc): `leader` is the floor's registrar, which answers
// with this task's own actor; the beats go there.
template <class Next>
void RegisterOnFloor(TaskPointer self, const AgentActor& agent, Next next) {
  self->request(caf::actor_cast<caf::actor>(self->state.leader), kRequestTimeout,
                caf::actor_cast<caf::actor>(agent))
      .then(
          [=](caf::actor& task) {
            self->state.leader = caf::actor_cast<CoordinatorActor>(task);
            next();
          },
          [](caf::error& e) { Die(e); });
}

// Registers (values: none), then on go_atom heartbeats once a second after `phase` until `end`,
// through `batcher` when it is set; with `floor`, registers with the floor's registrar instead
// (and with `oneway` sends its beats there unanswered). Variant "oneway": beats go to the leader
// as one-way messages, as agents with AgentConfig::one_way_heartbeats send them.
// The task is its own agent, as muster::Agent's one actor both registers and heartbeats: the
// leader holds one proxy per task, as it does for a real job.
caf::behavior HeartbeatTask(TaskPointer self, CoordinatorActor leader, int64_t id,
                            HeartbeatBatcherActor batcher, bool floor, bool oneway,
                            caf::actor registered, caf::actor finished, caf::timespan phase,
                            caf::timespan duration) {
  InitTask(self, std::move(leader), id, std::move(registered));
  self->state.batcher = std::move(batcher);
  self->state.oneway = oneway;
  auto agent = caf::actor_cast<AgentActor>(self);
  if (floor) {
    RegisterOnFloor(self, agent, [=] { Done(self); });
  } else {
    Register(self, agent, [=] { Done(self); });
  }
  return {
      [=](go_atom) {
        self->state.collector = finished;
        auto end = self->clock().now() + duration;
        self->delayed_send(self, phase, caf::tick_atom::value, end);
      },
      [=](caf::tick_atom, caf::actor_clock::time_point end) { Beat(self, end); },
      // The agent's interface (AgentActor). The leader pushes the error of a one-way beat
      // (naming this task; the others name a failed task).
      [=](const proto::ReportErrorToTaskRequest& report) {
        if (TaskName(report.error_payload().source_task()) == TaskName(self->state.task)) {
          ++self->state.errors;
        }
      },
      [](const proto::PreemptionNotice&) { return proto::PreemptionAck(); },
      [](const proto::SyncPointNotice&) {}, [](const proto::MembershipNotice&) {},
  };
}

}  // namespace

int RunBarrierClient(caf::actor_system& system, const ClientArgs& args) {
  CoordinatorActor leader = ConnectToLeader(system, args.port);
  auto collector = system.spawn(Collector, static_cast<size_t>(args.Count()));
  // Variant "combined": the process's tasks call through one barrier combiner, as agents that
  // share AgentOptions::barrier_combiner do.
  BarrierCombinerActor combiner;
  if (args.variant == "combined") combiner = SpawnBarrierCombiner(system);
  std::vector<caf::actor> tasks;
  for (int64_t i = 0; i < args.Count(); ++i) {
    tasks.push_back(
        system.spawn(BarrierTask, leader, args.First() + i, args.rounds, combiner, collector));
  }
  Emit("ready");
  WaitForGo();
  for (auto& task : tasks) caf::anon_send(task, go_atom::value);
  Results results = Collect(system, collector);
  for (int64_t r = 0; r < args.rounds; ++r) {
    int64_t first = INT64_MAX, last = 0, release = 0;
    for (const auto& times : results) {
      first = std::min(first, times[2 * r]);
      last = std::max(last, times[2 * r]);
      release = std::max(release, times[2 * r + 1]);
    }
    Emit("round", "r=" + std::to_string(r) + " first=" + std::to_string(first) +
                      " last=" + std::to_string(last) + " release=" + std::to_string(release));
  }
  Emit("done");
  return 0;
}

int RunBringupClient(caf::actor_system& system, const ClientArgs& args) {
  Emit("ready");
  WaitForGo();
  CoordinatorActor leader = ConnectToLeader(system, args.port);
  auto collector = system.spawn(Collector, static_cast<size_t>(args.Count()));
  std::vector<AgentActor> agents;
  for (int64_t i = 0; i < args.Count(); ++i) {
    agents.push_back(system.spawn(Agent, caf::actor{}, false));
    system.spawn(BringupTask, leader, args.First() + i, agents.back(), collector);
  }
  int64_t end = 0;
  for (const auto& values : Collect(system, collector)) end = std::max(end, values[0]);
  Emit("result", "end=" + std::to_string(end));
  return 0;
}

int RunHeartbeatClient(caf::actor_system& system, const ClientArgs& args) {
  bool floor = IsFloorVariant(args.variant);
  CoordinatorActor leader =
      floor ? ConnectToFloor(system, args.port) : ConnectToLeader(system, args.port);
  size_t count = static_cast<size_t>(args.Count());
  auto registered = system.spawn(Collector, count);
  auto finished = system.spawn(Collector, count);
  std::vector<caf::actor> tasks;
  auto duration = caf::timespan{args.duration_ms * 1'000'000};
  // Variant "batched": the process's tasks heartbeat through one batcher, as agents that share
  // AgentOptions::heartbeat_batcher do.
  HeartbeatBatcherActor batcher;
  if (args.variant == "batched") batcher = SpawnHeartbeatBatcher(system);
  for (size_t i = 0; i < count; ++i) {
    // Phases spread the tasks of all processes evenly over the second.
    auto phase =
        caf::timespan{(args.First() + static_cast<int64_t>(i)) * 1'000'000'000 / args.param};
    tasks.push_back(system.spawn(HeartbeatTask, leader, args.First() + static_cast<int64_t>(i),
                                 batcher, floor, absl::EndsWith(args.variant, "oneway"), registered,
                                 finished, phase, duration));
  }
  Collect(system, registered);
  Emit("ready");
  WaitForGo();
  if (args.variant == "keepalive") {
    // No task heartbeats: the process's CAF connection keep-alives stand for one per task
    // (RunClient set their interval), as a job of single-task processes would send them.
    std::this_thread::sleep_for(std::chrono::milliseconds(args.duration_ms));
    Emit("result", "ok=0 errors=0");
    return 0;
  }
  for (auto& task : tasks) caf::anon_send(task, go_atom::value);
  int64_t ok = 0, errors = 0;
  for (const auto& values : Collect(system, finished)) {
    ok += values[0];
    errors += values[1];
  }
  Emit("result", "ok=" + std::to_string(ok) + " errors=" + std::to_string(errors));
  return 0;
}

int RunFailureClient(caf::actor_system& system, const ClientArgs& args) {
  CoordinatorActor leader = ConnectToLeader(system, args.port);
  caf::scoped_actor self{system};
  auto collector = system.spawn(Collector, static_cast<size_t>(args.Count()));
  std::vector<AgentActor> agents;
  for (int64_t i = 0; i < args.Count(); ++i) {
    agents.push_back(
        system.spawn(Agent, caf::actor_cast<caf::actor>(self), IsHostedVariant(args.variant)));
    system.spawn(BringupTask, leader, args.First() + i, agents.back(), collector);
  }
  Collect(system, collector);
  Emit("ready");
  self->receive(
      [](report_atom, int64_t at_ns) { Emit("report", "at_ns=" + std::to_string(at_ns)); });
  // Stays connected until the driver ends the trial: a survivor that left now would be one more
  // task failure for the leader to fan out while the other survivors are still being measured.
  WaitForGo();
  return 0;
}

}  // namespace muster::bench
