// A deterministic fixture for the leader: a coordinator over jobs worker (N tasks) and ps (1),
// agents that record the errors the leader pushes to them, and shorthands for requests.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/messages/task_name.h"
#include "tests/testing/deterministic_fixture.h"

namespace muster::testing {

using namespace std::chrono_literals;

class LeaderTest : public DeterministicTest {
 protected:
  using Reports = std::shared_ptr<std::vector<proto::ReportErrorToTaskRequest>>;
  // What an agent of AgentWithEvents saw of the preemption protocol, and the step it answers.
  struct Events {
    std::vector<proto::PreemptionNotice> notices;
    std::vector<int64_t> sync_points;
    std::vector<proto::JobMembership> memberships;
    std::optional<int64_t> step;  // answered to a notice
  };

  static proto::CoordinationServiceConfig Config(int workers) {
    proto::CoordinationServiceConfig config;
    auto* worker = config.add_coordinated_job_list();
    worker->set_name("worker");
    worker->set_num_tasks(workers);
    auto* ps = config.add_coordinated_job_list();
    ps->set_name("ps");
    ps->set_num_tasks(1);
    config.set_heartbeat_timeout_in_ms(10'000);
    return config;
  }

  CoordinatorActor Spawn(proto::CoordinationServiceConfig config,
                         std::shared_ptr<SupervisionPolicy> policy = nullptr) {
    CoordinatorOptions options{
        .config = std::move(config), .incarnation = 77, .policy = std::move(policy)};
    leader_ = Keep(SpawnCoordinator(system_, std::move(options)));
    Drain();
    return leader_;
  }

  // An agent that records every error pushed to it.
  AgentActor Agent(Reports* reports) {
    *reports = std::make_shared<std::vector<proto::ReportErrorToTaskRequest>>();
    auto sink = *reports;
    return Keep(system_.spawn([sink]() -> AgentActor::behavior_type {
      return {[sink](const proto::ReportErrorToTaskRequest& r) { sink->push_back(r); },
              [](const proto::PreemptionNotice&) { return proto::PreemptionAck(); },
              [](const proto::SyncPointNotice&) {}, [](const proto::MembershipNotice&) {}};
    }));
  }

  // An agent that records the preemption notices and sync points pushed to it, and answers a
  // notice with events->step.
  AgentActor AgentWithEvents(std::shared_ptr<Events> events) {
    return Keep(system_.spawn([events]() -> AgentActor::behavior_type {
      return {[](const proto::ReportErrorToTaskRequest&) {},
              [events](const proto::PreemptionNotice& notice) {
                events->notices.push_back(notice);
                proto::PreemptionAck ack;
                if (events->step) ack.set_step(*events->step);
                return ack;
              },
              [events](const proto::SyncPointNotice& sync) {
                events->sync_points.push_back(sync.step());
              },
              [events](const proto::MembershipNotice& notice) {
                events->memberships.push_back(notice.membership());
              }};
    }));
  }

  absl::StatusOr<proto::RegisterTaskResponse> Register(const std::string& job, int id,
                                                       uint64_t incarnation,
                                                       const AgentActor& agent,
                                                       bool claim = false) {
    proto::RegisterTaskRequest request;
    *request.mutable_source_task() = MakeTask(job, id);
    request.set_incarnation(incarnation);
    request.set_claim(claim);
    return Call<proto::RegisterTaskResponse>(leader_, request, agent);
  }

  absl::StatusOr<proto::HeartbeatResponse> Heartbeat(const std::string& job, int id,
                                                     uint64_t incarnation) {
    proto::HeartbeatRequest request;
    *request.mutable_source_task() = MakeTask(job, id);
    request.set_incarnation(incarnation);
    return Call<proto::HeartbeatResponse>(leader_, request);
  }

  template <class Response, class Request>
  absl::StatusOr<Response> TaskCall(const std::string& job, int id) {
    Request request;
    *request.mutable_source_task() = MakeTask(job, id);
    return Call<Response>(leader_, request);
  }

  proto::CoordinatedTaskStateInfo State(const std::string& job, int id) {
    proto::GetTaskStateRequest request;
    *request.add_source_task() = MakeTask(job, id);
    auto reply = Call<proto::GetTaskStateResponse>(leader_, request);
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.ok() ? reply->task_state(0) : proto::CoordinatedTaskStateInfo{};
  }

  CoordinatorActor leader_;
};

}  // namespace muster::testing
