#include "muster/net/agent/per_process/heartbeat_batcher_actor.h"

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

using BeatPromise = caf::typed_response_promise<proto::HeartbeatResponse>;

// The beats gathered for one leader.
struct Gathered {
  CoordinatorActor leader;
  proto::HeartbeatBatchRequest batch;
  std::vector<BeatPromise> promises;
};

struct BatcherState {
  static inline const char* name = "muster.heartbeat_batcher";
  HeartbeatBatcherOptions options;
  absl::flat_hash_map<caf::actor_addr, Gathered> gathering;  // by leader
};

using BatcherPointer = HeartbeatBatcherActor::stateful_pointer<BatcherState>;

// Answers every beat: the failures listed by the leader with their status, the others OK.
void Answer(Gathered& batch, const proto::HeartbeatBatchResponse& response) {
  proto::HeartbeatResponse ok;
  ok.set_leader_incarnation(response.leader_incarnation());
  AnswerParts(batch.promises, response.failures(), ok,
              [](const proto::HeartbeatFailure& failure) { return StatusFromFields(failure); });
}

void Send(BatcherPointer self, Gathered gathered) {
  auto batch = std::make_shared<Gathered>(std::move(gathered));
  self->request(batch->leader, self->state.options.timeout, batch->batch)
      .then([batch](const proto::HeartbeatBatchResponse& response) { Answer(*batch, response); },
            [batch](caf::error& error) {
              for (auto& promise : batch->promises) promise.deliver(error);
            });
}

void Flush(BatcherPointer self) {
  auto gathering = std::move(self->state.gathering);
  self->state.gathering.clear();
  for (auto& [leader, gathered] : gathering) Send(self, std::move(gathered));
}

caf::result<proto::HeartbeatResponse> Gather(BatcherPointer self,
                                             const proto::HeartbeatRequest& beat,
                                             const CoordinatorActor& leader) {
  auto& st = self->state;
  if (!leader) {
    return ToError(absl::FailedPreconditionError(absl::StrCat(
        "heartbeat of ", TaskName(beat.source_task()), " without a leader: connect first")));
  }
  if (st.gathering.empty()) self->delayed_send(self, st.options.window, flush_atom::value);
  Gathered& gathered = st.gathering[leader.address()];
  gathered.leader = leader;
  *gathered.batch.add_beats() = beat;
  gathered.promises.push_back(self->make_response_promise<proto::HeartbeatResponse>());
  return gathered.promises.back();
}

HeartbeatBatcherActor::behavior_type BatcherBehavior(BatcherPointer self,
                                                     HeartbeatBatcherOptions options) {
  self->state.options = options;
  return {
      [=](const proto::HeartbeatRequest& beat, const CoordinatorActor& leader) {
        return Gather(self, beat, leader);
      },
      [=](flush_atom) { Flush(self); },
  };
}

}  // namespace

HeartbeatBatcherActor SpawnHeartbeatBatcher(caf::actor_system& system,
                                            HeartbeatBatcherOptions options) {
  return system.spawn(BatcherBehavior, options);
}

}  // namespace muster
