#include "muster/actors/barriers/barrier_state.h"

#include <algorithm>

#include <absl/strings/escaping.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/strip.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

std::string StateReason(const proto::CoordinatedTaskStateInfo& info) {
  switch (info.state()) {
    case proto::TASKSTATE_ERROR:
      return absl::StrCat(
          "task is set to ERROR: ",
          absl::StatusCodeToString(static_cast<absl::StatusCode>(info.error_code())), ": ",
          absl::StripSuffix(info.error_message(), "."));
    case proto::TASKSTATE_DISCONNECTED:
      return "task disconnected";
    case proto::TASKSTATE_CONNECTED:
      return absl::StrCat("task restarted and registered again with incarnation ",
                          info.incarnation());
    case proto::TASKSTATE_UNSPECIFIED:
    case proto::TASKSTATE_UNINITIALIZED:
    default:
      return "task state changed";
  }
}

}  // namespace

std::string BarrierName(absl::string_view id, int64_t counter) {
  return absl::StrCat(id, "::", counter);
}

BarrierParticipants::BarrierParticipants(std::vector<proto::CoordinatedTask> tasks,
                                         size_t cluster_size)
    : tasks_(std::move(tasks)), cluster_size_(cluster_size) {
  for (auto& task : tasks_) task.clear_recoverable();
  std::sort(tasks_.begin(), tasks_.end(), TaskLess);
  tasks_.erase(std::unique(tasks_.begin(), tasks_.end(), SameTask), tasks_.end());
  index_.reserve(tasks_.size());
  for (int i = 0; i < size(); ++i)
    index_.emplace(Key(tasks_[i].job_name(), tasks_[i].task_id()), i);
}

std::optional<int> BarrierParticipants::IndexOf(const proto::CoordinatedTask& task) const {
  auto it = index_.find(KeyView(task.job_name(), task.task_id()));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

bool BarrierParticipants::Matches(
    const google::protobuf::RepeatedPtrField<proto::CoordinatedTask>& tasks) const {
  if (static_cast<size_t>(tasks.size()) < tasks_.size()) return false;
  std::vector<bool> seen(tasks_.size(), false);
  size_t distinct = 0;
  for (const auto& task : tasks) {
    std::optional<int> index = IndexOf(task);
    if (!index) return false;
    if (!seen[*index]) ++distinct;
    seen[*index] = true;
  }
  return distinct == tasks_.size();
}

BarrierState::BarrierState(BarrierSpec spec)
    : spec_(std::move(spec)), arrived_(spec_.participants->size(), false) {}

std::vector<proto::CoordinatedTask> BarrierState::Missing() const {
  std::vector<proto::CoordinatedTask> missing;
  missing.reserve(total() - arrived_count_);
  for (int i = 0; i < total(); ++i) {
    if (!arrived_[i]) missing.push_back(spec_.participants->task(i));
  }
  return missing;
}

BarrierEffects BarrierState::Arrive(const proto::BarrierRequest& request) {
  if (finished_) return AnswerFinished(request);
  if (request.counter() != spec_.counter) {
    return FinishWithCaller(BarrierCounterMismatchError(spec_.id, request.counter(), spec_.counter,
                                                        request.source_task()));
  }
  if (absl::Status invalid = ValidateTasks(request); !invalid.ok()) {
    return FinishWithCaller(std::move(invalid));
  }
  int index = *spec_.participants->IndexOf(request.source_task());
  BarrierEffects effects;
  effects.park = index;
  if (arrived_[index]) {
    effects.cancel.emplace_back(
        index, MakeBarrierError(absl::CancelledError(absl::StrCat(
                                    "Cancelled because there's a more recent barrier call for ",
                                    BarrierName(spec_.id, spec_.counter), " from the same task (",
                                    TaskName(request.source_task()), ").")),
                                spec_.id, spec_.counter));
    return effects;
  }
  arrived_[index] = true;
  if (++arrived_count_ < total()) return effects;
  BarrierEffects passed = Finish(absl::OkStatus());
  passed.park = index;
  return passed;
}

BarrierEffects BarrierState::AnswerFinished(const proto::BarrierRequest& request) const {
  BarrierEffects effects;
  effects.reply = request.counter() == spec_.counter
                      ? result_
                      : BarrierCounterMismatchError(spec_.id, request.counter(), spec_.counter,
                                                    request.source_task());
  return effects;
}

absl::Status BarrierState::ValidateTasks(const proto::BarrierRequest& request) const {
  return ValidateBarrierCall(spec_.id, spec_.counter, *spec_.participants, spec_.first_task,
                             request);
}

BarrierEffects BarrierState::Cancel(const proto::CancelBarrierRequest& request) {
  BarrierEffects effects;
  if (finished_ && request.counter() == spec_.counter) {
    effects.reply = BarrierAlreadyPassedError(spec_.id, spec_.counter, result_.code());
  } else if (request.counter() != spec_.counter) {
    effects.reply = CancelCounterMismatchError(spec_.id, request.counter(), spec_.counter,
                                               request.source_task());
  } else {
    effects = Finish(BarrierCancelledError(spec_.id, spec_.counter, request.source_task()));
    effects.reply = absl::OkStatus();
  }
  return effects;
}

BarrierEffects BarrierState::TaskStateChanged(const proto::CoordinatedTaskStateInfo& info) {
  std::optional<int> index = spec_.participants->IndexOf(info.task());
  if (finished_ || !index) return {};
  if (spec_.recoverable.contains(*index)) return RecoverableStateChanged(*index, info);
  if (info.state() != proto::TASKSTATE_ERROR && info.state() != proto::TASKSTATE_DISCONNECTED) {
    return {};
  }
  const std::string task = TaskName(info.task());
  return Finish(
      WithFailedTask(absl::InternalError(absl::StrCat(
                         "Barrier failed because: ", StateReason(info),
                         ". Barrier Id: ", BarrierName(spec_.id, spec_.counter), ", Task: ", task,
                         ". The barrier cannot pass without ", task,
                         "; restart the job or reset the task before calling the barrier again.")),
                     info.task()));
}

BarrierEffects BarrierState::RecoverableStateChanged(int index,
                                                     const proto::CoordinatedTaskStateInfo& info) {
  uint64_t& known_incarnation = spec_.recoverable[index];
  bool restarted =
      info.state() == proto::TASKSTATE_CONNECTED && info.incarnation() != known_incarnation;
  bool stale = restarted || info.state() == proto::TASKSTATE_ERROR ||
               info.state() == proto::TASKSTATE_DISCONNECTED;
  if (info.state() == proto::TASKSTATE_CONNECTED) known_incarnation = info.incarnation();
  if (!stale || !arrived_[index]) return {};
  arrived_[index] = false;
  --arrived_count_;
  BarrierEffects effects;
  effects.cancel.emplace_back(
      index, MakeBarrierError(
                 absl::CancelledError(absl::StrCat(
                     "Stale barrier invocation is cancelled because: ", StateReason(info),
                     ". Barrier: ", BarrierName(spec_.id, spec_.counter),
                     ", Task: ", TaskName(info.task()),
                     ". The task is recoverable: the barrier keeps waiting for it to call again.")),
                 spec_.id, spec_.counter));
  return effects;
}

BarrierEffects BarrierState::DeadlineReached(BarrierClock::time_point now) {
  if (finished_ || now < spec_.deadline) return {};
  return Finish(TimedOutError());
}

absl::Status BarrierState::TimedOutError() const {
  std::vector<proto::CoordinatedTask> missing = Missing();
  return absl::DeadlineExceededError(absl::StrCat(
      "Barrier timed out. Id: ", BarrierName(spec_.id, spec_.counter), ". ", arrived_count_, "/",
      total(), " tasks reached the barrier within ", spec_.timeout.count(),
      " ms. The first task at the barrier: ", TaskName(spec_.first_task),
      ". Tasks that did not reach it (", missing.size(), "): ", SummarizeTasks(missing),
      ". This usually happens because a task reached the barrier too late (slow, stuck) or never "
      "(crashed, or took another code path): check the logs of these tasks and of the first "
      "task, or raise the barrier timeout."));
}

BarrierEffects BarrierState::Shutdown() {
  if (finished_) return {};
  return Finish(absl::AbortedError(
      absl::StrCat("Barrier failed because service is shutting down. Barrier_id: ",
                   BarrierName(spec_.id, spec_.counter))));
}

std::optional<proto::BarrierInfo> BarrierState::Info(BarrierClock::time_point now) const {
  if (finished_) return std::nullopt;
  proto::BarrierInfo info;
  info.set_barrier_id(spec_.id);
  info.set_counter(spec_.counter);
  info.set_deadline_in_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(spec_.deadline - now).count());
  *info.mutable_first_task() = spec_.first_task;
  info.set_arrived(arrived_count_);
  info.set_total(total());
  for (auto& task : Missing()) *info.add_waiting_for() = std::move(task);
  info.set_waited_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(now - (spec_.deadline - spec_.timeout))
          .count());
  return info;
}

BarrierEffects BarrierState::Finish(absl::Status status) {
  finished_ = true;
  result_ = status.ok() ? status : MakeBarrierError(std::move(status), spec_.id, spec_.counter);
  BarrierEffects effects;
  effects.finished = true;
  return effects;
}

BarrierEffects BarrierState::FinishWithCaller(absl::Status status) {
  BarrierEffects effects = Finish(std::move(status));
  effects.reply = result_;
  return effects;
}

absl::Status BarrierCounterMismatchError(absl::string_view id, int64_t request_counter,
                                         int64_t service_counter,
                                         const proto::CoordinatedTask& task) {
  std::string expected =
      service_counter < 0
          ? std::string("the service has no instance of it yet (it expects counter 0)")
          : absl::StrCat("the service thinks it is the ", service_counter, "-th instance");
  std::string reason =
      request_counter == 0 || service_counter <= 0
          ? "The service or the task probably restarted and lost count of the barrier's "
            "instances; the error carries the service's counter, call again with the next one."
          : "One task is probably way too quick or too slow in its execution compared with the "
            "others: every task must finish one instance before it calls the next.";
  return MakeBarrierError(
      absl::InternalError(absl::StrCat("Barrier (", BarrierName(id, request_counter),
                                       ") is invoked by task ", TaskName(task), ", but ", expected,
                                       ". ", reason)),
      id, service_counter);
}

absl::Status CancelCounterMismatchError(absl::string_view id, int64_t request_counter,
                                        int64_t service_counter,
                                        const proto::CoordinatedTask& task) {
  std::string expected =
      service_counter < 0
          ? std::string("the service has no instance of it (it expects counter 0)")
          : absl::StrCat("the service thinks it is the ", service_counter, "-th instance");
  return MakeBarrierError(
      absl::FailedPreconditionError(absl::StrCat(
          "Barrier (", BarrierName(id, request_counter), ") is cancelled by task ", TaskName(task),
          ", but ", expected,
          ". This is likely due to a restart in the task or the service; cancel the instance "
          "the service runs, or nothing.")),
      id, service_counter);
}

absl::Status BarrierAlreadyPassedError(absl::string_view id, int64_t counter,
                                       absl::StatusCode code) {
  return MakeBarrierError(
      absl::FailedPreconditionError(absl::StrCat(
          "Barrier (", BarrierName(id, counter), ") has already been passed with status code: ",
          absl::StatusCodeToString(code), "; there is nothing to cancel.")),
      id, counter);
}

absl::Status BarrierCancelledError(absl::string_view id, int64_t counter,
                                   const proto::CoordinatedTask& task) {
  return MakeBarrierError(
      absl::CancelledError(absl::StrCat("Barrier (", BarrierName(id, counter),
                                        ") is cancelled by task: ", TaskName(task))),
      id, counter);
}

absl::Status BarrierUnknownTasksError(absl::string_view id, int64_t counter,
                                      absl::Span<const proto::CoordinatedTask> unknown) {
  return MakeBarrierError(
      absl::InvalidArgumentError(absl::StrCat(
          "Unexpected tasks (", SummarizeTasks(unknown),
          ") that are not in the cluster were named by the barrier. Barrier Id: ",
          BarrierName(id, counter), ". Check the task list against the cluster configuration.")),
      id, counter);
}

absl::Status BarrierNonParticipantError(absl::string_view id, int64_t counter,
                                        const proto::CoordinatedTask& task) {
  return MakeBarrierError(
      absl::InvalidArgumentError(absl::StrCat(
          "A non-participating task (", TaskName(task),
          ") called the barrier: ", BarrierName(id, counter),
          ". Add the task to the barrier's task list, or do not call the barrier from it.")),
      id, counter);
}

absl::Status BarrierTasksInErrorError(absl::string_view id, int64_t counter,
                                      absl::Span<const proto::CoordinatedTask> in_error,
                                      const proto::CoordinatedTaskStateInfo& first_error) {
  return MakeBarrierError(
      WithFailedTask(
          absl::InternalError(absl::StrCat(
              "Tasks (", SummarizeTasks(in_error),
              ") are already in error before the barrier was called. Barrier Id: ",
              BarrierName(id, counter), ". Task error of ", TaskName(first_error.task()), ": ",
              absl::StatusCodeToString(static_cast<absl::StatusCode>(first_error.error_code())),
              ": ", absl::StripSuffix(first_error.error_message(), "."),
              ". Reset or restart these tasks before calling the barrier again.")),
          first_error.task()),
      id, counter);
}

absl::Status BarrierOneTimeError(absl::string_view id, int64_t request_counter,
                                 int64_t service_counter, const absl::Status& result) {
  return MakeBarrierError(
      absl::FailedPreconditionError(absl::StrCat(
          "Barrier (", BarrierName(id, request_counter), ") cannot run: ", id,
          " is a one-time barrier of the service that already finished as instance ",
          service_counter, " with status code: ", absl::StatusCodeToString(result.code()),
          ". Use another barrier id.")),
      id, service_counter);
}

namespace {

// "the barrier was started by X with n tasks (...)", for the task-list errors.
std::string StartedBy(const BarrierParticipants& participants,
                      const proto::CoordinatedTask& first_task) {
  return absl::StrCat("the barrier was started by ", TaskName(first_task), " with ",
                      participants.size(), " tasks (", SummarizeTasks(participants.tasks()), ")");
}

}  // namespace

absl::Status ValidateBarrierCall(absl::string_view id, int64_t counter,
                                 const BarrierParticipants& participants,
                                 const proto::CoordinatedTask& first_task,
                                 const proto::BarrierRequest& request) {
  if (request.tasks().empty() && !participants.whole_cluster()) {
    return absl::InvalidArgumentError(absl::StrCat(
        BarrierName(id, counter), ": No tasks were specified by ", TaskName(request.source_task()),
        ", which implies that the entire cluster is participating in the barrier. However, the "
        "service disagrees: ",
        StartedBy(participants, first_task), ". Every caller must pass the same task list."));
  }
  if (!request.tasks().empty() && !participants.Matches(request.tasks())) {
    return absl::InvalidArgumentError(
        absl::StrCat("Conflicting tasks specified by different processes for the same barrier: ",
                     BarrierName(id, counter), ". ", TaskName(request.source_task()), " passed ",
                     SummarizeTasks(std::vector<proto::CoordinatedTask>(request.tasks().begin(),
                                                                        request.tasks().end())),
                     ", but ", StartedBy(participants, first_task),
                     ". Every caller must pass the same task list."));
  }
  if (!participants.IndexOf(request.source_task())) {
    return BarrierNonParticipantError(id, counter, request.source_task());
  }
  return absl::OkStatus();
}

absl::Status CheckBarrierIdLimits(absl::string_view id, bool known, size_t ids_kept,
                                  const proto::CoordinatedTask& task, const BarrierLimits& limits) {
  if (id.size() > limits.max_id_bytes) {
    return MakeBarrierError(
        absl::InvalidArgumentError(absl::StrCat(
            "A barrier call from task ", TaskName(task), " has a barrier_id of ", id.size(),
            " bytes (\"", absl::CHexEscape(id.substr(0, 32)), "...\"); ids are at most ",
            limits.max_id_bytes, " bytes (--max-barrier-id-size).")),
        "", -1);
  }
  if (!known && ids_kept >= limits.max_ids) {
    return MakeBarrierError(
        absl::ResourceExhaustedError(absl::StrCat("Barrier ", id, " from task ", TaskName(task),
                                                  " would be a new barrier id; the leader "
                                                  "keeps at most ",
                                                  limits.max_ids,
                                                  " ids (--max-barrier-ids). Reuse ids: their "
                                                  "counters make every id reusable.")),
        id, -1);
  }
  return absl::OkStatus();
}

absl::Status CheckBarrierTimeout(const proto::BarrierRequest& request) {
  const int64_t timeout = request.barrier_timeout_in_ms();
  if (timeout <= kMaxBarrierTimeoutMs) return absl::OkStatus();
  return MakeBarrierError(
      absl::InvalidArgumentError(absl::StrCat(
          "Barrier ", request.barrier_id(), " from task ", TaskName(request.source_task()),
          " has a timeout of ", timeout, " ms; the most is ", kMaxBarrierTimeoutMs,
          " ms (about 34 years, what agents send for no deadline).")),
      request.barrier_id(), -1);
}

absl::Status BarrierEmptyIdError(const proto::CoordinatedTask& task) {
  return MakeBarrierError(
      absl::InvalidArgumentError(absl::StrCat("A barrier call from task ", TaskName(task),
                                              " has an empty barrier_id; give every barrier a "
                                              "unique, non-empty id.")),
      "", -1);
}

}  // namespace muster
