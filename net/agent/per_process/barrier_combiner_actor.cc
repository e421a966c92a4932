#include "muster/net/agent/per_process/barrier_combiner_actor.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/strings/str_cat.h>
#include <caf/typed_event_based_actor.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/messages/vocabulary/group_reply.h"

namespace muster {
namespace {

using CallPromise = caf::typed_response_promise<proto::BarrierResponse>;

// The calls gathered for one barrier instance at one leader.
struct Group {
  CoordinatorActor leader;
  proto::BarrierGroupRequest request;
  std::vector<CallPromise> promises;
};

struct CombinerState {
  static inline const char* name = "muster.barrier_combiner";
  caf::timespan slack{0};
  // By leader and the request without its source task.
  absl::flat_hash_map<std::pair<caf::actor_addr, std::string>, Group> gathering;
};

using CombinerPointer = BarrierCombinerActor::stateful_pointer<CombinerState>;

absl::Status FailureStatus(const proto::BarrierGroupFailure& failure, const std::string& id) {
  absl::Status status = StatusFromFields(failure);
  if (failure.has_failed_task()) status = WithFailedTask(std::move(status), failure.failed_task());
  if (failure.barrier_counter() < 0) return status;
  return MakeBarrierError(status, id, failure.barrier_counter());
}

void Answer(Group& group, const proto::BarrierGroupResponse& response) {
  proto::BarrierResponse passed;
  passed.set_counter(response.counter());
  const std::string& id = group.request.request().barrier_id();
  AnswerParts(
      group.promises, response.failures(), passed,
      [&id](const proto::BarrierGroupFailure& failure) { return FailureStatus(failure, id); });
}

void Send(CombinerPointer self, Group gathered) {
  auto group = std::make_shared<Group>(std::move(gathered));
  auto timeout = std::chrono::milliseconds(
      std::max<int64_t>(group->request.request().barrier_timeout_in_ms(), 0));
  self->request(group->leader, caf::duration{timeout + self->state.slack}, group->request)
      .then([group](const proto::BarrierGroupResponse& response) { Answer(*group, response); },
            [group](caf::error& error) {
              for (auto& promise : group->promises) promise.deliver(error);
            });
}

caf::result<proto::BarrierResponse> Gather(CombinerPointer self, proto::BarrierRequest call,
                                           const CoordinatorActor& leader) {
  auto& st = self->state;
  if (!leader) {
    return ToError(absl::FailedPreconditionError(
        absl::StrCat("barrier ", call.barrier_id(), " called by ", TaskName(call.source_task()),
                     " without a leader: connect first")));
  }
  proto::CoordinatedTask source = std::move(*call.mutable_source_task());
  call.clear_source_task();
  if (st.gathering.empty()) self->send(self, flush_atom::value);
  Group& group = st.gathering[{leader.address(), call.SerializeAsString()}];
  if (!group.leader) {
    group.leader = leader;
    *group.request.mutable_request() = std::move(call);
  }
  *group.request.add_sources() = std::move(source);
  group.promises.push_back(self->make_response_promise<proto::BarrierResponse>());
  return group.promises.back();
}

BarrierCombinerActor::behavior_type CombinerBehavior(CombinerPointer self, caf::timespan slack) {
  self->state.slack = slack;
  return {
      [=](proto::BarrierRequest& call, const CoordinatorActor& leader) {
        return Gather(self, std::move(call), leader);
      },
      [=](flush_atom) {
        auto gathering = std::move(self->state.gathering);
        self->state.gathering.clear();
        for (auto& [key, group] : gathering) Send(self, std::move(group));
      },
  };
}

}  // namespace

BarrierCombinerActor SpawnBarrierCombiner(caf::actor_system& system, caf::timespan slack) {
  return system.spawn(CombinerBehavior, slack);
}

}  // namespace muster
