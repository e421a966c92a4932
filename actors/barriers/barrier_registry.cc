#include "muster/actors/barriers/barrier_registry.h"

#include <algorithm>
#include <utility>

#include <absl/strings/str_cat.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

// Longer timeouts are cut to ten years, which keeps deadlines far from clock overflow.

BarrierRoute Reply(absl::StatusOr<proto::BarrierResponse> reply) {
  BarrierRoute route;
  route.reply = std::move(reply);
  return route;
}

BarrierRoute Forward(BarrierActor actor) {
  BarrierRoute route;
  route.action = BarrierRoute::Action::kForward;
  route.actor = std::move(actor);
  return route;
}

CancelBarrierRoute ReplyCancel(absl::Status reply) {
  CancelBarrierRoute route;
  route.reply = std::move(reply);
  return route;
}

std::vector<proto::CoordinatedTask> UnknownTasks(const proto::BarrierRequest& request,
                                                 const ClusterView& view) {
  std::vector<proto::CoordinatedTask> unknown;
  for (const auto& task : request.tasks()) {
    if (!view.IsKnown(task)) unknown.push_back(task);
  }
  return unknown;
}

// Fills spec->recoverable and returns the non-recoverable participants in ERROR.
std::vector<const proto::CoordinatedTaskStateInfo*> ScanParticipants(const ClusterView& view,
                                                                     BarrierSpec* spec) {
  std::vector<const proto::CoordinatedTaskStateInfo*> in_error;
  const BarrierParticipants& participants = *spec->participants;
  for (int i = 0; i < participants.size(); ++i) {
    const proto::CoordinatedTaskStateInfo* info = view.Find(participants.task(i));
    if (view.IsRecoverable(participants.task(i))) {
      spec->recoverable.emplace(i, info != nullptr ? info->incarnation() : 0);
    } else if (info != nullptr && info->state() == proto::TASKSTATE_ERROR) {
      in_error.push_back(info);
    }
  }
  return in_error;
}

absl::Status TasksInError(const BarrierSpec& spec,
                          const std::vector<const proto::CoordinatedTaskStateInfo*>& in_error) {
  std::vector<proto::CoordinatedTask> tasks;
  for (const auto* info : in_error) tasks.push_back(info->task());
  return BarrierTasksInErrorError(spec.id, spec.counter, tasks, *in_error.front());
}

}  // namespace

BarrierRegistry::BarrierRegistry(absl::flat_hash_set<std::string> unrepeatable_ids,
                                 BarrierLimits limits)
    : unrepeatable_(std::move(unrepeatable_ids)), limits_(limits) {}

void BarrierRegistry::AddUnrepeatable(const std::string& id) { unrepeatable_.insert(id); }

BarrierRoute BarrierRegistry::RouteBarrier(proto::BarrierRequest* request, const ClusterView& view,
                                           BarrierClock::time_point now) {
  const std::string& id = request->barrier_id();
  if (id.empty()) return Reply(BarrierEmptyIdError(request->source_task()));
  if (absl::Status limits = CheckBarrierIdLimits(id, entries_.contains(id), entries_.size(),
                                                 request->source_task(), limits_);
      !limits.ok()) {
    return Reply(limits);
  }
  if (absl::Status timeout = CheckBarrierTimeout(*request); !timeout.ok()) return Reply(timeout);
  const bool rejoin = request->counter() == 0 && view.IsRecoverable(request->source_task());
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    if (request->counter() == 0) return Start(request, 0, view, now);
    return Reply(BarrierCounterMismatchError(id, request->counter(), -1, request->source_task()));
  }
  const Entry& entry = it->second;
  if (!entry.live) return RouteFinished(request, entry, rejoin, view, now);
  if (!entry.actor) {
    return Reply(MakeBarrierError(
        absl::InternalError(absl::StrCat("Barrier ", BarrierName(id, entry.counter),
                                         " has no actor: the coordinator did not record it")),
        id, entry.counter));
  }
  if (rejoin) request->set_counter(entry.counter);
  return Forward(entry.actor);
}

BarrierRoute BarrierRegistry::RouteFinished(proto::BarrierRequest* request, const Entry& entry,
                                            bool rejoin, const ClusterView& view,
                                            BarrierClock::time_point now) {
  const int64_t counter = entry.counter;
  const bool unrepeatable = unrepeatable_.contains(request->barrier_id());
  if (rejoin && !unrepeatable) return Start(request, counter + 1, view, now);
  if (request->counter() == counter) return ReplyStored(*request, entry);
  if (request->counter() == counter + 1) {
    if (!unrepeatable) return Start(request, counter + 1, view, now);
    return Reply(
        BarrierOneTimeError(request->barrier_id(), request->counter(), counter, entry.result));
  }
  return Reply(BarrierCounterMismatchError(request->barrier_id(), request->counter(), counter,
                                           request->source_task()));
}

BarrierRoute BarrierRegistry::ReplyStored(const proto::BarrierRequest& request,
                                          const Entry& entry) const {
  if (entry.participants) {
    absl::Status invalid = ValidateBarrierCall(request.barrier_id(), entry.counter,
                                               *entry.participants, entry.first_task, request);
    if (!invalid.ok()) return Reply(MakeBarrierError(invalid, request.barrier_id(), entry.counter));
  }
  if (!entry.result.ok()) return Reply(entry.result);
  proto::BarrierResponse response;
  response.set_counter(entry.counter);
  return Reply(std::move(response));
}

BarrierRoute BarrierRegistry::Start(proto::BarrierRequest* request, int64_t counter,
                                    const ClusterView& view, BarrierClock::time_point now) {
  request->set_counter(counter);
  const std::string& id = request->barrier_id();
  if (auto unknown = UnknownTasks(*request, view); !unknown.empty()) {
    return Reject(id, counter, BarrierUnknownTasksError(id, counter, unknown));
  }
  BarrierSpec spec;
  spec.id = id;
  spec.counter = counter;
  spec.participants = std::make_shared<const BarrierParticipants>(
      request->tasks().empty()
          ? view.tasks()
          : std::vector<proto::CoordinatedTask>(request->tasks().begin(), request->tasks().end()),
      view.tasks().size());
  if (auto in_error = ScanParticipants(view, &spec); !in_error.empty()) {
    return Reject(id, counter, TasksInError(spec, in_error));
  }
  if (!spec.participants->IndexOf(request->source_task())) {
    return Reject(id, counter, BarrierNonParticipantError(id, counter, request->source_task()));
  }
  spec.first_task = MakeTask(request->source_task().job_name(), request->source_task().task_id());
  spec.timeout = std::chrono::milliseconds(
      std::max(request->barrier_timeout_in_ms(), int64_t{0}));  // CheckBarrierTimeout bounds it
  spec.deadline = now + spec.timeout;
  spec.unrepeatable = unrepeatable_.contains(id);
  entries_[id] =
      Entry{counter, /*live=*/true, BarrierActor(), spec.participants, spec.first_task, {}};
  live_ids_.insert(id);
  BarrierRoute route;
  route.action = BarrierRoute::Action::kStart;
  route.spec = std::move(spec);
  return route;
}

BarrierRoute BarrierRegistry::Reject(const std::string& id, int64_t counter, absl::Status error) {
  RecordFinished(id, counter, error);
  return Reply(std::move(error));
}

void BarrierRegistry::RecordFinished(const std::string& id, int64_t counter, absl::Status result) {
  live_ids_.erase(id);
  entries_[id] = Entry{counter, /*live=*/false, BarrierActor(), nullptr, {}, std::move(result)};
}

void BarrierRegistry::Started(const std::string& id, BarrierActor actor) {
  auto it = entries_.find(id);
  if (it != entries_.end() && it->second.live) it->second.actor = std::move(actor);
}

CancelBarrierRoute BarrierRegistry::RouteCancel(const proto::CancelBarrierRequest& request) {
  const std::string& id = request.barrier_id();
  const int64_t counter = request.counter();
  if (id.empty()) return ReplyCancel(BarrierEmptyIdError(request.source_task()));
  if (id.size() > limits_.max_id_bytes) {
    return ReplyCancel(CheckBarrierIdLimits(id, true, 0, request.source_task(), limits_));
  }
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    if (counter == 0) return CancelNext(request);
    return ReplyCancel(CancelCounterMismatchError(id, counter, -1, request.source_task()));
  }
  const Entry& entry = it->second;
  if (entry.live && counter == entry.counter && entry.actor) {
    CancelBarrierRoute route;
    route.action = CancelBarrierRoute::Action::kForward;
    route.actor = entry.actor;
    return route;
  }
  if (!entry.live && counter == entry.counter) {
    return ReplyCancel(BarrierAlreadyPassedError(id, counter, entry.result.code()));
  }
  if (!entry.live && counter == entry.counter + 1 && !unrepeatable_.contains(id)) {
    return CancelNext(request);
  }
  return ReplyCancel(CancelCounterMismatchError(id, counter, entry.counter, request.source_task()));
}

CancelBarrierRoute BarrierRegistry::CancelNext(const proto::CancelBarrierRequest& request) {
  RecordFinished(
      request.barrier_id(), request.counter(),
      BarrierCancelledError(request.barrier_id(), request.counter(), request.source_task()));
  return ReplyCancel(absl::OkStatus());
}

BarrierActor BarrierRegistry::Finish(const std::string& id, int64_t counter, absl::Status result) {
  auto it = entries_.find(id);
  if (it == entries_.end() || !it->second.live || it->second.counter != counter) return {};
  // The instance's participants stay, so that later calls are validated before the result.
  Entry& entry = it->second;
  BarrierActor actor = std::move(entry.actor);
  live_ids_.erase(id);
  entry.live = false;
  entry.result = std::move(result);
  return actor;
}

bool BarrierRegistry::IsLive(const std::string& id, int64_t counter,
                             const caf::actor_addr& actor) const {
  auto it = entries_.find(id);
  if (it == entries_.end() || !it->second.live || it->second.counter != counter) return false;
  return !actor || !it->second.actor || it->second.actor.address() == actor;
}

std::vector<BarrierActor> BarrierRegistry::LiveActors() const {
  std::vector<BarrierActor> actors;
  for (const std::string& id : live_ids_) {
    const Entry& entry = entries_.at(id);
    if (entry.actor) actors.push_back(entry.actor);
  }
  return actors;
}

BarrierActor BarrierRegistry::LiveActor(const std::string& id) const {
  if (!live_ids_.contains(id)) return {};
  return entries_.at(id).actor;
}

std::vector<BarrierActor> BarrierRegistry::LiveActorsFor(const proto::CoordinatedTask& task) const {
  std::vector<BarrierActor> actors;
  for (const std::string& id : live_ids_) {
    const Entry& entry = entries_.at(id);
    if (entry.actor && entry.participants->IndexOf(task)) actors.push_back(entry.actor);
  }
  return actors;
}

std::optional<absl::Status> BarrierRegistry::LastResult(const std::string& id) const {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.live) return std::nullopt;
  return it->second.result;
}

}  // namespace muster
