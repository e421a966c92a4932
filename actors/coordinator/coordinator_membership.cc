// The coordinator and elastic jobs: each job's ElasticMembership hears the job's task states,
// its safe-point calls (WaitForMembership) wait here as response promises, and every new
// membership is pushed to the job's connected agents (docs/supervision.md, "Elastic jobs").
#include <algorithm>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>

#include "muster/actors/coordinator/coordinator_state.h"
#include "muster/messages/requests/wire_timeouts.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

constexpr caf::timespan kDefaultSettle = std::chrono::seconds(5);

// "0, 1, 3": task ids of a membership's list or of NotArrived().
template <class Ids>
std::string IdList(const Ids& ids) {
  return absl::StrJoin(ids, ", ");
}

// Arms the job's timer for `when` (its settle deadline or a call's deadline).
void WakeAt(CoordinatorPointer self, const std::string& job, ElasticMembership::TimePoint when) {
  caf::timespan in = std::max(caf::timespan{0}, when - self->clock().now());
  self->delayed_send(self, in, membership_atom::value, job);
}

// A call at the safe point answered with `membership`.
proto::WaitForMembershipResponse Answer(const proto::JobMembership& membership) {
  proto::WaitForMembershipResponse response;
  *response.mutable_membership() = membership;
  return response;
}

// What a call that ran out of time is told: who did not arrive, or why it was not admitted.
absl::Status TimedOut(const MembershipWait& wait, const ElasticMembership& job) {
  const proto::JobMembership& view = job.membership();
  std::string name = TaskName(wait.task);
  if (job.IsMember(wait.task.task_id())) {
    return absl::DeadlineExceededError(
        absl::StrCat("WaitForMembership of ", name, " timed out at version ", view.version(),
                     " of job ", view.job_name(), ": members ", IdList(job.NotArrived()),
                     " did not reach their safe point (WaitForMembership), so tasks ",
                     IdList(view.waiting()), " were not admitted; call it from every member"));
  }
  if (!job.formed()) {
    return absl::DeadlineExceededError(
        absl::StrCat("WaitForMembership of ", name, " timed out: job ", view.job_name(),
                     " has not formed (", job.num_connected(), " of at least ", view.min_tasks(),
                     " tasks connected); start more tasks or wait longer"));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "WaitForMembership of ", name, " timed out before ", name, " was admitted: job ",
      view.job_name(), " runs version ", view.version(), " with members ", IdList(view.members()),
      ", which admit waiting tasks when every one of them reaches its safe point"));
}

// Answers the waiting calls of the job's members with the membership they get now.
void AnswerMembers(CoordinatorPointer self, const std::string& job_name) {
  auto& st = self->state;
  const ElasticMembership& job = st.elastic.at(job_name);
  std::erase_if(st.membership_waits, [&](MembershipWait& wait) {
    if (wait.task.job_name() != job_name || !job.IsMember(wait.task.task_id())) return false;
    wait.promise.deliver(Answer(job.membership()));
    return true;
  });
}

// Ends the waiting call of `task`, if it has one, with `error`.
void EndWaitOf(CoordinatorPointer self, const proto::CoordinatedTask& task,
               const absl::Status& error) {
  std::erase_if(self->state.membership_waits, [&](MembershipWait& wait) {
    if (!SameTask(wait.task, task)) return false;
    wait.promise.deliver(ToError(MakeCoordinationError(error)));
    return true;
  });
}

// The job's membership changed: every call it settles is answered, every connected agent of
// the job is told, and the event is recorded.
void Publish(CoordinatorPointer self, const std::string& job_name) {
  auto& st = self->state;
  ElasticMembership& job = st.elastic.at(job_name);
  const proto::JobMembership& view = job.membership();
  AnswerMembers(self, job_name);
  proto::MembershipNotice notice;
  *notice.mutable_membership() = view;
  for (const auto& task : st.tasks.view().tasks()) {
    if (task.job_name() != job_name) continue;
    if (const AgentActor& agent = st.tasks.SlotOf(task).agent) self->send(agent, notice);
  }
  if (EventsWanted(self)) {
    proto::JobEvent event;
    event.set_kind(proto::MEMBERSHIP_CHANGED);
    event.set_detail(absl::StrCat("job ", job_name, " version ", view.version(), ": members [",
                                  IdList(view.members()), "], waiting [", IdList(view.waiting()),
                                  "]"));
    EmitEvent(self, std::move(event));
  }
}

// Ends the waiting calls of `job` whose deadline passed, and the calls of tasks that left.
void ExpireWaits(CoordinatorPointer self, const std::string& job_name) {
  auto& st = self->state;
  ElasticMembership& job = st.elastic.at(job_name);
  const auto now = self->clock().now();
  std::erase_if(st.membership_waits, [&](MembershipWait& wait) {
    if (wait.task.job_name() != job_name) return false;
    const int32_t id = wait.task.task_id();
    if (!job.IsConnected(id)) {
      wait.promise.deliver(ToError(MakeCoordinationError(absl::FailedPreconditionError(
          absl::StrCat(TaskName(wait.task), " left while it waited in WaitForMembership; ",
                       "register it again")))));
      return true;
    }
    if (!wait.deadline || now < *wait.deadline) return false;
    wait.promise.deliver(ToError(MakeCoordinationError(TimedOut(wait, job))));
    job.Withdraw(id);
    return true;
  });
}

}  // namespace

void InitElasticJobs(CoordinatorPointer self) {
  auto& st = self->state;
  int64_t settle_ms = st.options.config.membership_settle_ms();
  caf::timespan settle =
      settle_ms > 0 ? caf::timespan{std::chrono::milliseconds(settle_ms)} : kDefaultSettle;
  for (const auto& job : st.options.config.coordinated_job_list()) {
    if (job.min_tasks() <= 0 || job.num_tasks() <= 0) continue;
    int32_t min_tasks = std::min(job.min_tasks(), job.num_tasks());
    st.elastic.emplace(job.name(),
                       ElasticMembership(job.name(), min_tasks, job.num_tasks(), settle));
  }
}

void OnMembershipState(CoordinatorPointer self, const TaskStateChange& change) {
  auto& st = self->state;
  const proto::CoordinatedTask& task = change.info.task();
  auto it = st.elastic.find(task.job_name());
  if (it == st.elastic.end()) return;
  ElasticMembership& job = it->second;
  const int32_t id = task.task_id();
  bool changed = false;
  if (change.connected()) {
    // A new incarnation in the place of a connected one: the old one left first, and its call
    // ends (the new incarnation makes its own).
    if (change.ended_incarnation != 0) {
      changed |= job.Left(id);
      EndWaitOf(self, task,
                absl::FailedPreconditionError(
                    absl::StrCat(TaskName(task),
                                 " registered a new incarnation while its last one waited in "
                                 "WaitForMembership; the new one calls it again")));
    }
    if (!job.IsConnected(id)) changed |= job.Connected(id, self->clock().now());
  } else if (job.IsConnected(id)) {
    changed |= job.Left(id);
  }
  if (!change.connected()) ExpireWaits(self, task.job_name());
  if (changed) {
    Publish(self, task.job_name());
  } else if (job.Release()) {
    AnswerMembers(self, task.job_name());  // the task they waited for to admit left
  }
  if (auto deadline = job.settle_deadline()) WakeAt(self, task.job_name(), *deadline);
}

void OnMembershipTimer(CoordinatorPointer self, const std::string& job_name) {
  auto it = self->state.elastic.find(job_name);
  if (it == self->state.elastic.end()) return;
  if (it->second.Settle(self->clock().now())) Publish(self, job_name);
  ExpireWaits(self, job_name);
}

caf::result<proto::WaitForMembershipResponse> WaitForMembership(
    CoordinatorPointer self, const proto::WaitForMembershipRequest& request) {
  auto& st = self->state;
  const proto::CoordinatedTask& task = request.source_task();
  const proto::CoordinatedTaskStateInfo* info = st.tasks.view().Find(task);
  if (info == nullptr) {
    return ToError(UnknownTaskError("WaitForMembership from unknown task ", task));
  }
  if (absl::Status own = ActsAsItself(self, task); !own.ok()) return ToError(own);
  auto it = st.elastic.find(task.job_name());
  if (it == st.elastic.end()) {
    return ToError(MakeCoordinationError(absl::InvalidArgumentError(
        absl::StrCat("WaitForMembership from ", TaskName(task), ": job ", task.job_name(),
                     " is not elastic (it has a fixed size); give it a size range, e.g. --job ",
                     task.job_name(), "=2:8"))));
  }
  ElasticMembership& job = it->second;
  if (request.known_version() < 0 || request.timeout_in_ms() < 0 ||
      request.timeout_in_ms() > kMaxMembershipTimeoutMs) {
    return ToError(MakeCoordinationError(absl::InvalidArgumentError(
        absl::StrCat("WaitForMembership from ", TaskName(task), " runs version ",
                     request.known_version(), " with a timeout of ", request.timeout_in_ms(),
                     " ms; give a version of 0 or more and a timeout of 0 (none) to ",
                     kMaxMembershipTimeoutMs, " ms"))));
  }
  if (info->state() != proto::TASKSTATE_CONNECTED) {
    return ToError(MakeCoordinationError(absl::FailedPreconditionError(
        absl::StrCat("WaitForMembership from ", TaskName(task),
                     ", which is not connected; register it first"))));
  }
  // One call per task: a later one (an agent that re-sent it after a reconnect) takes the
  // place of the one before, and arrives afresh.
  job.Withdraw(task.task_id());
  EndWaitOf(self, task,
            absl::FailedPreconditionError(
                absl::StrCat("a later WaitForMembership of ", TaskName(task),
                             " took the place of this one (a task waits in one call at a time)")));
  switch (job.Arrive(task.task_id(), request.known_version())) {
    case ElasticMembership::Arrival::kAnswer:
      return Answer(job.membership());
    case ElasticMembership::Arrival::kChanged: {
      proto::WaitForMembershipResponse response = Answer(job.membership());
      Publish(self, task.job_name());
      return response;
    }
    case ElasticMembership::Arrival::kWait:
      break;
  }
  MembershipWait wait{.task = task,
                      .promise = self->make_response_promise<proto::WaitForMembershipResponse>()};
  if (request.timeout_in_ms() > 0) {
    wait.deadline = self->clock().now() + std::chrono::milliseconds(request.timeout_in_ms());
    WakeAt(self, task.job_name(), *wait.deadline);
  }
  st.membership_waits.push_back(wait);
  return wait.promise;
}

caf::result<proto::GetMembershipResponse> GetMembership(
    CoordinatorPointer self, const proto::GetMembershipRequest& request) {
  auto it = self->state.elastic.find(request.job_name());
  if (it == self->state.elastic.end()) {
    return ToError(MakeCoordinationError(absl::InvalidArgumentError(
        absl::StrCat("GetMembership of job \"", request.job_name(),
                     "\": no elastic job has that name (jobs with a size range are elastic)"))));
  }
  proto::GetMembershipResponse response;
  *response.mutable_membership() = it->second.membership();
  return response;
}

}  // namespace muster
