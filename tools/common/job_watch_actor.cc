#include "muster/tools/common/job_watch_actor.h"

#include <absl/strings/str_cat.h>

#include "muster/messages/requests/task_requests.h"
#include "muster/messages/status/caf_text.h"
#include "muster/messages/status/status_codec.h"

namespace muster::cli {
namespace {

struct JobWatchState {
  static inline const char* name = "muster.cli.job_watch";
  // First: CAF constructs a state from the actor pointer when it can, and a handle could be.
  int64_t version = -1;  // -1: answer at once
  CoordinatorActor coordinator;
  std::string job;
  JobWatchListener listener;
};

using JobWatchPointer = JobWatchActor::stateful_pointer<JobWatchState>;

void Stop(JobWatchPointer self, const absl::Status& why) {
  self->send(self->state.listener, watch_failed_atom::value, ToError(why));
  self->quit();
}

void Poll(JobWatchPointer self) {
  auto& st = self->state;
  proto::WatchJobStateRequest request = requests::WatchJobState(st.job, st.version);
  // No timeout: the coordinator answers when the job changes; its loss is seen by the monitor.
  self->request(st.coordinator, caf::infinite, request)
      .then(
          [=](proto::WatchJobStateResponse& response) {
            self->state.version = response.version_number();
            self->send(self->state.listener, std::move(response));
            self->send(self, poll_atom::value);
          },
          [=](caf::error& error) { Stop(self, ToStatus(error)); });
}

JobWatchActor::behavior_type JobWatchBehavior(JobWatchPointer self, CoordinatorActor coordinator,
                                              std::string job, JobWatchListener listener) {
  auto& st = self->state;
  st.coordinator = std::move(coordinator);
  st.job = std::move(job);
  st.listener = std::move(listener);
  self->monitor(st.coordinator);
  self->set_down_handler([=](caf::down_msg& down) {
    Stop(self,
         absl::UnavailableError(absl::StrCat("lost the leader: ", DescribeCafError(down.reason))));
  });
  self->send(self, poll_atom::value);
  return {
      [=](poll_atom) { Poll(self); },
  };
}

}  // namespace

JobWatchActor SpawnJobWatch(caf::actor_system& system, CoordinatorActor coordinator,
                            std::string job, JobWatchListener listener) {
  return system.spawn(JobWatchBehavior, std::move(coordinator), std::move(job),
                      std::move(listener));
}

}  // namespace muster::cli
