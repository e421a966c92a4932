#include "muster/actors/tasks/task_admission.h"

#include <string>

#include <absl/strings/str_cat.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {

absl::Status MayClaim(const proto::CoordinatedTaskStateInfo& info, uint64_t pending,
                      const proto::RegisterTaskRequest& request) {
  if (!request.claim()) return absl::OkStatus();
  const uint64_t holder = info.state() == proto::TASKSTATE_CONNECTED ? info.incarnation() : pending;
  if (holder == 0 || holder == request.incarnation()) return absl::OkStatus();
  return MakeCoordinationError(
      absl::AlreadyExistsError(absl::StrCat(
          TaskName(info.task()), " is held by incarnation ", holder,
          " (a live process); a claim takes only a free task. Claim another task of the job, or "
          "claim this one again once its holder is gone.")),
      info.task());
}

absl::Status MayReconnect(const proto::CoordinatedTaskStateInfo& info,
                          const proto::RegisterTaskRequest& request) {
  if (info.state() == proto::TASKSTATE_CONNECTED && info.incarnation() == request.incarnation()) {
    return absl::OkStatus();
  }
  return MakeCoordinationError(
      absl::FailedPreconditionError(absl::StrCat(
          TaskName(info.task()), " cannot reconnect with incarnation ", request.incarnation(),
          ": the leader knows the task as ", proto::CoordinatedTaskState_Name(info.state()),
          info.incarnation() != 0 ? absl::StrCat(" with incarnation ", info.incarnation())
                                  : std::string(),
          ". The leader restarted without the task's state (no --state-dir, or another one), or "
          "the task failed while it was away; restart the task.")),
      info.task());
}

bool MayRejoinFromError(bool recoverable, const absl::Status& error) {
  return recoverable && error.code() == absl::StatusCode::kUnavailable &&
         GetCoordinationError(error).has_value();
}

}  // namespace muster
