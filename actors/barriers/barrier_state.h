// The transition logic of one barrier instance, free of CAF: its participants, arrivals, first
// task, counter and result, and the error messages of every barrier failure. The barrier actor
// feeds it inputs (calls, cancels, task states, the deadline, shutdown) and carries out the
// effects it returns; the registry uses the error builders for the calls it answers itself.
// Every input costs O(1) amortised, except the messages that list tasks (built once, on error).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/hash/hash.h>
#include <absl/status/status.h>
#include <absl/strings/string_view.h>
#include <absl/types/span.h>
#include <google/protobuf/repeated_field.h>

#include "muster/actors/durability/state_writer_actor.h"
#include "muster/messages/requests/wire_timeouts.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

// The clock of barrier deadlines: the actor clock's (caf::actor_clock::clock_type).
using BarrierClock = std::chrono::steady_clock;

// Formats "<id>::<counter>", the name of one barrier instance in every message.
std::string BarrierName(absl::string_view id, int64_t counter);

// The tasks of one barrier instance, indexed 0..size()-1 in (job, task id) order. Immutable once
// built, so the registry and the actor can share it.
class BarrierParticipants {
 public:
  // Keeps each task of `tasks` once (duplicates and recoverable bits are dropped).
  // `cluster_size` is the number of tasks in the cluster.
  BarrierParticipants(std::vector<proto::CoordinatedTask> tasks, size_t cluster_size);

  int size() const { return static_cast<int>(tasks_.size()); }
  // True when every task of the cluster participates.
  bool whole_cluster() const { return tasks_.size() == cluster_size_; }
  const std::vector<proto::CoordinatedTask>& tasks() const { return tasks_; }
  const proto::CoordinatedTask& task(int index) const { return tasks_[index]; }
  // The index of `task`, or nullopt when it does not participate.
  std::optional<int> IndexOf(const proto::CoordinatedTask& task) const;
  // True when `tasks` (in any order, duplicates allowed) names exactly the participants.
  bool Matches(const google::protobuf::RepeatedPtrField<proto::CoordinatedTask>& tasks) const;

 private:
  // (job name, task id) keys, looked up without copying the job name.
  using Key = std::pair<std::string, int>;
  using KeyView = std::pair<absl::string_view, int>;
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(KeyView key) const { return absl::Hash<KeyView>()(key); }
  };
  struct KeyEq {
    using is_transparent = void;
    bool operator()(KeyView a, KeyView b) const { return a == b; }
  };

  std::vector<proto::CoordinatedTask> tasks_;
  absl::flat_hash_map<Key, int, KeyHash, KeyEq> index_;
  size_t cluster_size_;
};

// The fixed parameters of one barrier instance, decided by the registry on its first call.
struct BarrierSpec {
  std::string id;
  int64_t counter = 0;
  std::shared_ptr<const BarrierParticipants> participants;
  // Recoverable participants (by index) and the incarnation each had when the instance began.
  absl::flat_hash_map<int, uint64_t> recoverable;
  // The task whose call started the instance.
  proto::CoordinatedTask first_task;
  // The first call's arrival time plus its timeout.
  BarrierClock::time_point deadline;
  std::chrono::milliseconds timeout{0};
  // A one-time barrier of the service (register, shutdown): never re-run with counter + 1.
  bool unrepeatable = false;
  // With a state dir: the result is recorded there before any participant learns it.
  StateWriterActor writer;
};

// What the actor must do after an input, in this order.
struct BarrierEffects {
  // Parked calls to answer alone (a replaced or stale call), by participant index.
  std::vector<std::pair<int, absl::Status>> cancel;
  // Park the current call as this participant's call.
  std::optional<int> park;
  // The instance just finished: notify the parent, answer every parked call with result().
  bool finished = false;
  // Answer the current call now (OK: BarrierResponse with the counter, or CancelBarrierResponse).
  std::optional<absl::Status> reply;
};

// One barrier instance:
//
//   WAITING --every participant arrived---------------> FINISHED(OK)
//      |    --deadline reached -----------------------> FINISHED(DeadlineExceeded)
//      |    --CancelBarrier ----------------------------> FINISHED(Cancelled)
//      |    --non-recoverable participant ERROR/left ---> FINISHED(Internal)
//      |    --counter mismatch -------------------------> FINISHED(Internal)
//      |    --conflicting task list, non-participant ---> FINISHED(InvalidArgument)
//      |    --service shutting down --------------------> FINISHED(Aborted)
//      +--> same task calls again: its earlier call gets Cancelled, the new one waits
//      +--> recoverable participant fails or restarts: its call gets Cancelled, still WAITING
// FINISHED answers later calls with the same counter with the stored result.
class BarrierState {
 public:
  explicit BarrierState(BarrierSpec spec);

  const std::string& id() const { return spec_.id; }
  int64_t counter() const { return spec_.counter; }
  const BarrierSpec& spec() const { return spec_; }
  bool finished() const { return finished_; }
  // The result (with its BarrierError payload); OK until finished.
  const absl::Status& result() const { return result_; }
  int arrived() const { return arrived_count_; }
  int total() const { return spec_.participants->size(); }
  // The participants that have not arrived, in (job, task id) order.
  std::vector<proto::CoordinatedTask> Missing() const;

  // A Barrier call (already routed to this instance by the registry).
  BarrierEffects Arrive(const proto::BarrierRequest& request);
  // A CancelBarrier call.
  BarrierEffects Cancel(const proto::CancelBarrierRequest& request);
  // A task's new state, pushed by the coordinator. A non-recoverable participant in ERROR or
  // DISCONNECTED ends the instance with Internal whose failed task (FailedTaskOf) is it.
  BarrierEffects TaskStateChanged(const proto::CoordinatedTaskStateInfo& info);
  // The deadline timer; does nothing before the deadline.
  BarrierEffects DeadlineReached(BarrierClock::time_point now);
  // The service is shutting down.
  BarrierEffects Shutdown();
  // The instance as GetBarriers shows it; nullopt once finished.
  std::optional<proto::BarrierInfo> Info(BarrierClock::time_point now) const;

 private:
  BarrierEffects Finish(absl::Status status);
  BarrierEffects FinishWithCaller(absl::Status status);
  BarrierEffects AnswerFinished(const proto::BarrierRequest& request) const;
  absl::Status ValidateTasks(const proto::BarrierRequest& request) const;
  BarrierEffects RecoverableStateChanged(int index, const proto::CoordinatedTaskStateInfo& info);
  absl::Status TimedOutError() const;

  BarrierSpec spec_;
  std::vector<bool> arrived_;
  int arrived_count_ = 0;
  bool finished_ = false;
  absl::Status result_;
};

// Error builders shared with the registry. Every status carries the BarrierError payload
// {id, counter}, where counter is the service's counter for the id (-1: no instance yet), so
// that an agent can resynchronise its counter from any error.

// Internal: the call's counter is not the service's (only the caller is answered with it when
// the instance has finished).
absl::Status BarrierCounterMismatchError(absl::string_view id, int64_t request_counter,
                                         int64_t service_counter,
                                         const proto::CoordinatedTask& task);
// FailedPrecondition: CancelBarrier named another instance than the service's.
absl::Status CancelCounterMismatchError(absl::string_view id, int64_t request_counter,
                                        int64_t service_counter,
                                        const proto::CoordinatedTask& task);
// FailedPrecondition: CancelBarrier came after the instance finished.
absl::Status BarrierAlreadyPassedError(absl::string_view id, int64_t counter,
                                       absl::StatusCode code);
// Cancelled: the instance was cancelled by `task`.
absl::Status BarrierCancelledError(absl::string_view id, int64_t counter,
                                   const proto::CoordinatedTask& task);
// InvalidArgument: the task list names tasks outside the cluster.
absl::Status BarrierUnknownTasksError(absl::string_view id, int64_t counter,
                                      absl::Span<const proto::CoordinatedTask> unknown);
// InvalidArgument: `task` called a barrier it does not participate in.
absl::Status BarrierNonParticipantError(absl::string_view id, int64_t counter,
                                        const proto::CoordinatedTask& task);
// Internal: participants were already in ERROR when the instance began; the failed task
// (FailedTaskOf) is first_error's.
absl::Status BarrierTasksInErrorError(absl::string_view id, int64_t counter,
                                      absl::Span<const proto::CoordinatedTask> in_error,
                                      const proto::CoordinatedTaskStateInfo& first_error);
// FailedPrecondition: a one-time barrier was called with a later counter.
absl::Status BarrierOneTimeError(absl::string_view id, int64_t request_counter,
                                 int64_t service_counter, const absl::Status& result);
// InvalidArgument: the request has no barrier id.
absl::Status BarrierEmptyIdError(const proto::CoordinatedTask& task);
// The longest barrier id and the most distinct ids the leader keeps (configurable:
// max_barrier_id_bytes, max_barrier_ids).
inline constexpr size_t kMaxBarrierIdBytes = 1024;
inline constexpr size_t kMaxBarrierIds = 100'000;
// The longest barrier timeout, kMaxBarrierTimeoutMs, is what a request without a deadline
// carries (messages/requests/wire_timeouts.h).
struct BarrierLimits {
  size_t max_id_bytes = kMaxBarrierIdBytes;
  size_t max_ids = kMaxBarrierIds;
};
// InvalidArgument (id over the limit's bytes) or ResourceExhausted (a new id while the limit's
// ids are kept); OK otherwise. `known`: the id has an entry already.
absl::Status CheckBarrierIdLimits(absl::string_view id, bool known, size_t ids_kept,
                                  const proto::CoordinatedTask& task,
                                  const BarrierLimits& limits = {});
// InvalidArgument for a timeout over kMaxBarrierTimeoutMs; OK otherwise. (A zero or negative
// timeout is the reference's: the instance's deadline has passed, DeadlineExceeded at once.)
absl::Status CheckBarrierTimeout(const proto::BarrierRequest& request);

// InvalidArgument when a call does not fit the instance: no task list while the instance is not
// the whole cluster, another task list, or a caller that does not participate. Live and
// finished instances validate the same way, before answering.
absl::Status ValidateBarrierCall(absl::string_view id, int64_t counter,
                                 const BarrierParticipants& participants,
                                 const proto::CoordinatedTask& first_task,
                                 const proto::BarrierRequest& request);

}  // namespace muster
