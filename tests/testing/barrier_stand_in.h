// A test-only stand-in for the coordinator's barrier part: it owns a ClusterView and a
// BarrierRegistry and uses them exactly as the coordinator does (route each call, spawn and
// record new instances, delegate, push task states, collect inspections, stop finished
// actors). BarrierTest adds request builders on the deterministic fixture.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <absl/container/flat_hash_set.h>
#include <caf/actor_cast.hpp>
#include <caf/exit_reason.hpp>
#include <caf/system_messages.hpp>

#include "muster/actors/barriers/barrier_actor.h"
#include "muster/actors/barriers/barrier_registry.h"
#include "muster/actors/cluster/cluster_view.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/proto/coordination_config.pb.h"
#include "tests/testing/deterministic_fixture.h"

namespace muster::testing {

using BarrierStandInActor = caf::typed_actor<
    caf::replies_to<proto::BarrierRequest>::with<proto::BarrierResponse>,
    caf::replies_to<proto::CancelBarrierRequest>::with<proto::CancelBarrierResponse>,
    caf::replies_to<proto::GetBarriersRequest>::with<proto::GetBarriersResponse>,
    // A task state change, as the task actors would report it.
    caf::reacts_to<proto::CoordinatedTaskStateInfo>,
    caf::reacts_to<barrier_done_atom, std::string, int64_t, caf::error, proto::BarrierInfo>>;

// What a test can see of the stand-in (single-threaded test scheduler only).
struct BarrierStandInProbe {
  const BarrierRegistry* registry = nullptr;  // valid while the stand-in runs
  std::vector<BarrierActor> spawned;
  int stopped = 0;  // barrier actors that terminated
};

struct BarrierStandInState {
  static inline const char* name = "muster.test.barrier_stand_in";
  ClusterView view;
  BarrierRegistry registry;
  std::shared_ptr<BarrierStandInProbe> probe;
};

using BarrierStandInPointer = BarrierStandInActor::stateful_pointer<BarrierStandInState>;

inline caf::result<proto::BarrierResponse> StandInBarrier(BarrierStandInPointer self,
                                                          proto::BarrierRequest& request) {
  auto& state = self->state;
  BarrierRoute route = state.registry.RouteBarrier(&request, state.view, self->clock().now());
  if (route.action == BarrierRoute::Action::kReply) return BarrierReply(route.reply);
  if (route.action == BarrierRoute::Action::kStart) {
    route.actor = SpawnBarrier(self->system(), std::move(*route.spec),
                               caf::actor_cast<BarrierParentActor>(self));
    self->monitor(route.actor);
    state.registry.Started(request.barrier_id(), route.actor);
    state.probe->spawned.push_back(route.actor);
  }
  return self->delegate(route.actor, std::move(request));
}

inline caf::result<proto::CancelBarrierResponse> StandInCancel(
    BarrierStandInPointer self, proto::CancelBarrierRequest& request) {
  CancelBarrierRoute route = self->state.registry.RouteCancel(request);
  if (route.action == CancelBarrierRoute::Action::kReply) return CancelBarrierReply(route.reply);
  return self->delegate(route.actor, std::move(request));
}

inline void StandInTaskState(BarrierStandInPointer self,
                             const proto::CoordinatedTaskStateInfo& info) {
  self->state.view.Update(info);
  for (const BarrierActor& actor : self->state.registry.LiveActorsFor(info.task())) {
    self->send(actor, info);
  }
}

inline void StandInDone(BarrierStandInPointer self, const std::string& id, int64_t counter,
                        const caf::error& result) {
  BarrierActor actor = self->state.registry.Finish(id, counter, ToStatus(result));
  if (actor) self->send_exit(actor, caf::exit_reason::user_shutdown);
}

inline BarrierStandInActor::behavior_type BarrierStandInBehavior(
    BarrierStandInPointer self, proto::CoordinationServiceConfig config,
    absl::flat_hash_set<std::string> unrepeatable, std::shared_ptr<BarrierStandInProbe> probe) {
  self->state.view = ClusterView(config);
  self->state.registry = BarrierRegistry(std::move(unrepeatable));
  self->state.probe = probe;
  probe->registry = &self->state.registry;
  self->set_down_handler([probe](caf::down_msg&) { ++probe->stopped; });
  return {
      [self](proto::BarrierRequest& request) { return StandInBarrier(self, request); },
      [self](proto::CancelBarrierRequest& request) { return StandInCancel(self, request); },
      [self](const proto::GetBarriersRequest&) {
        return CollectBarriers(self, self->state.registry.LiveActors());
      },
      [self](const proto::CoordinatedTaskStateInfo& info) { StandInTaskState(self, info); },
      [self](barrier_done_atom, const std::string& id, int64_t counter, const caf::error& result,
             const proto::BarrierInfo&) { StandInDone(self, id, counter, result); },
  };
}

// Request builders and a stand-in per test.
class BarrierTest : public DeterministicTest {
 protected:
  // A cluster of `workers` worker tasks (and `ps` ps tasks); recoverable_jobs as given.
  static proto::CoordinationServiceConfig Cluster(int workers, int ps = 0,
                                                  std::vector<std::string> recoverable = {}) {
    proto::CoordinationServiceConfig config;
    auto* job = config.add_coordinated_job_list();
    job->set_name("worker");
    job->set_num_tasks(workers);
    if (ps > 0) {
      job = config.add_coordinated_job_list();
      job->set_name("ps");
      job->set_num_tasks(ps);
    }
    for (auto& name : recoverable) config.add_recoverable_jobs(name);
    return config;
  }

  BarrierStandInActor StandIn(const proto::CoordinationServiceConfig& config,
                              absl::flat_hash_set<std::string> unrepeatable = {}) {
    return Keep(system_.spawn(BarrierStandInBehavior, config, std::move(unrepeatable), probe_));
  }

  static proto::BarrierRequest Barrier(const std::string& id, const proto::CoordinatedTask& source,
                                       int64_t counter = 0,
                                       std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                       const std::vector<proto::CoordinatedTask>& tasks = {}) {
    proto::BarrierRequest request;
    request.set_barrier_id(id);
    request.set_barrier_timeout_in_ms(timeout.count());
    for (const auto& task : tasks) *request.add_tasks() = task;
    *request.mutable_source_task() = source;
    request.set_counter(counter);
    return request;
  }

  static proto::CancelBarrierRequest Cancel(const std::string& id,
                                            const proto::CoordinatedTask& source,
                                            int64_t counter = 0) {
    proto::CancelBarrierRequest request;
    request.set_barrier_id(id);
    *request.mutable_source_task() = source;
    request.set_counter(counter);
    return request;
  }

  static proto::CoordinatedTaskStateInfo State(const proto::CoordinatedTask& task,
                                               proto::CoordinatedTaskState state,
                                               uint64_t incarnation = 1,
                                               absl::Status error = absl::OkStatus()) {
    proto::CoordinatedTaskStateInfo info;
    *info.mutable_task() = task;
    info.set_state(state);
    info.set_incarnation(incarnation);
    info.set_error_code(static_cast<int>(error.code()));
    info.set_error_message(std::string(error.message()));
    return info;
  }

  static proto::CoordinatedTask Worker(int id) { return MakeTask("worker", id); }

  // Sends a Barrier call and returns its reply slot (empty while the call waits).
  Reply<proto::BarrierResponse> Arrive(const BarrierStandInActor& stand_in,
                                       const proto::BarrierRequest& request) {
    return Send<proto::BarrierResponse>(stand_in, request);
  }

  std::shared_ptr<BarrierStandInProbe> probe_ = std::make_shared<BarrierStandInProbe>();
};

}  // namespace muster::testing
