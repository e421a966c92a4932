// The Agent's job-health calls: progress, preemption, barrier progress and the key-value
// reductions (docs/agent.md, "Progress and preemption").
#include <vector>

#include <absl/strings/str_cat.h>
#include <absl/time/time.h>

#include "muster/messages/requests/barrier_requests.h"
#include "muster/messages/requests/kv_requests.h"
#include "muster/messages/requests/task_requests.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/actor/calls/barrier_progress_actor.h"
#include "muster/net/agent/agent.h"

namespace muster {

std::string BarrierProgressText(const proto::BarrierInfo& info) {
  std::vector<proto::CoordinatedTask> missing(info.waiting_for().begin(), info.waiting_for().end());
  return absl::StrCat("barrier ", info.barrier_id(), ": ", info.arrived(), "/", info.total(),
                      " arrived after ",
                      absl::FormatDuration(absl::Milliseconds(info.waited_ms() / 100 * 100)),
                      "; missing ", SummarizeTasks(missing));
}

namespace {

// kNoStep marks "no step yet": the lowest step is stored one above it.
int64_t Storable(int64_t step) {
  return step == AgentProgress::kNoStep ? AgentProgress::kNoStep + 1 : step;
}

}  // namespace

void Agent::ReportProgress(int64_t step) { progress_->step.store(Storable(step)); }

absl::StatusOr<bool> Agent::NotifyPreemption(absl::Time deadline, const std::string& reason) {
  auto response =
      Ask<proto::NotifyPreemptionResponse>(requests::NotifyPreemption(reason, deadline));
  if (!response.ok()) return response.status();
  return response->first();
}

absl::StatusOr<bool> Agent::ReachedSyncPoint(int64_t step) {
  step = Storable(step);
  // Store, then look (both sequentially consistent): the agent actor sets the flag, then reads
  // the step, so one of the two sees the other's write (agent_health.cc).
  progress_->step.store(step);
  if (!progress_->preempting.load()) return false;
  return Ask<bool>(sync_point_atom::value, step);
}

absl::StatusOr<proto::BarrierInfo> Agent::GetBarrierProgress(const std::string& id) {
  auto response = Ask<proto::GetBarrierProgressResponse>(requests::GetBarrierProgress(id));
  if (!response.ok()) return response.status();
  return response->barrier();
}

absl::Status Agent::WaitAtBarrier(const std::string& id, absl::Duration timeout,
                                  const std::vector<proto::CoordinatedTask>& tasks,
                                  const BarrierProgressOptions& progress) {
  if (!progress.on_progress || progress.every <= absl::ZeroDuration() ||
      progress.every == absl::InfiniteDuration()) {
    return WaitAtBarrier(id, timeout, tasks);
  }
  caf::actor poller = SpawnBarrierProgressPoller(
      system_, actor_, id, absl::ToChronoNanoseconds(progress.every), progress.on_progress);
  absl::Status status = WaitAtBarrier(id, timeout, tasks);
  caf::anon_send_exit(poller, caf::exit_reason::user_shutdown);
  return status;
}

absl::StatusOr<int64_t> Agent::ReduceKeyValueDir(const std::string& directory, proto::ReduceOp op) {
  auto response = Ask<proto::ReduceKeyValueDirResponse>(requests::ReduceKeyValueDir(directory, op));
  if (!response.ok()) return response.status();
  return response->value();
}

absl::StatusOr<std::vector<proto::KeyValueEntry>> Agent::WaitForKeys(const std::string& directory,
                                                                     int64_t count,
                                                                     absl::Duration timeout) {
  auto response = Ask<proto::WaitForKeysResponse>(requests::WaitForKeys(directory, count, timeout));
  if (!response.ok()) return response.status();
  return std::vector<proto::KeyValueEntry>(response->kv().begin(), response->kv().end());
}

}  // namespace muster
