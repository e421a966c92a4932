// The coordinator's bookkeeping of barriers, free of actor logic: per barrier id either the live
// instance (counter, actor, participants) or the last finished one in compact form (counter and
// result). It decides for each Barrier / CancelBarrier call whether to answer now, forward the
// call to the live actor, or start a new instance (and with which spec).
//
//   (none) --first call, counter 0--> LIVE(n) --Finish(n)--> FINISHED(n) --call n+1--> LIVE(n+1)
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include "muster/actors/barriers/barrier_actor.h"
#include "muster/actors/barriers/barrier_state.h"
#include "muster/actors/cluster/cluster_view.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

// The decision for a Barrier call.
struct BarrierRoute {
  enum class Action {
    kReply,    // answer now with `reply`
    kForward,  // delegate the (possibly rewritten) request to `actor`
    kStart,    // spawn an actor for `spec`, call Started(), then delegate the request to it
  };
  Action action = Action::kReply;
  absl::StatusOr<proto::BarrierResponse> reply;
  BarrierActor actor;
  std::optional<BarrierSpec> spec;
};

// The decision for a CancelBarrier call: answer now with `reply`, or delegate to `actor`.
struct CancelBarrierRoute {
  enum class Action { kReply, kForward };
  Action action = Action::kReply;
  absl::Status reply;
  BarrierActor actor;
};

class BarrierRegistry {
 public:
  // `unrepeatable_ids` are one-time barriers of the service (register, shutdown): they run once
  // and are never restarted with a later counter.
  explicit BarrierRegistry(absl::flat_hash_set<std::string> unrepeatable_ids = {},
                           BarrierLimits limits = {});

  // Marks `id` as a one-time barrier (before its first call).
  void AddUnrepeatable(const std::string& id);

  // Routes a Barrier call that arrived at `now`. A recoverable task calling with counter 0
  // joins the live instance or starts the next one; `request`'s counter is rewritten then.
  // Starting an instance validates its first call against `view`: unknown tasks, participants
  // already in ERROR and a caller outside the task list finish the instance at once.
  BarrierRoute RouteBarrier(proto::BarrierRequest* request, const ClusterView& view,
                            BarrierClock::time_point now);
  // Records instance `counter` of `id` as finished with `result`, as a restarted leader recovers
  // it from its state dir.
  void Restore(const std::string& id, int64_t counter, absl::Status result) {
    RecordFinished(id, counter, std::move(result));
  }
  // Records the actor spawned for the instance that RouteBarrier just started.
  void Started(const std::string& id, BarrierActor actor);

  // Routes a CancelBarrier call. Cancelling the next instance before it starts records it as
  // cancelled (its calls get Cancelled).
  CancelBarrierRoute RouteCancel(const proto::CancelBarrierRequest& request);

  // Records that instance `counter` of `id` finished with `result` (the actor's done message).
  // Returns the instance's actor, which the caller must stop with an exit message; a null
  // handle when the instance is not live.
  BarrierActor Finish(const std::string& id, int64_t counter, absl::Status result);

  // True while instance `counter` of `id` is live (a done message of an instance that is not is
  // stale: it belongs to a registry that was replaced).
  // With `actor`: and that actor is the instance's (a done message of an earlier round's
  // instance with the same id and counter is not).
  bool IsLive(const std::string& id, int64_t counter, const caf::actor_addr& actor = {}) const;
  // The actors of every live instance (for shutdown and inspection).
  std::vector<BarrierActor> LiveActors() const;
  // The actor of the live instance of `id`; a null handle when none is live.
  BarrierActor LiveActor(const std::string& id) const;
  // The actors of the live instances that `task` participates in (for task state pushes).
  std::vector<BarrierActor> LiveActorsFor(const proto::CoordinatedTask& task) const;

  // Every barrier id with a live or finished instance.
  std::vector<std::string> Ids() const {
    std::vector<std::string> ids;
    ids.reserve(entries_.size());
    for (const auto& [id, entry] : entries_) ids.push_back(id);
    return ids;
  }

  size_t live_count() const { return live_ids_.size(); }
  size_t finished_count() const { return entries_.size() - live_ids_.size(); }
  // The stored result of the last finished instance of `id`; nullopt when there is none.
  std::optional<absl::Status> LastResult(const std::string& id) const;

 private:
  struct Entry {
    int64_t counter = 0;
    bool live = false;
    BarrierActor actor;  // live only
    // Unset for an instance refused at its first call.
    std::shared_ptr<const BarrierParticipants> participants;
    proto::CoordinatedTask first_task;
    absl::Status result;  // finished only
  };

  BarrierRoute RouteFinished(proto::BarrierRequest* request, const Entry& entry, bool rejoin,
                             const ClusterView& view, BarrierClock::time_point now);
  BarrierRoute Start(proto::BarrierRequest* request, int64_t counter, const ClusterView& view,
                     BarrierClock::time_point now);
  BarrierRoute Reject(const std::string& id, int64_t counter, absl::Status error);
  CancelBarrierRoute CancelNext(const proto::CancelBarrierRequest& request);
  void RecordFinished(const std::string& id, int64_t counter, absl::Status result);
  // A finished instance's stored result, after the call is validated against it.
  BarrierRoute ReplyStored(const proto::BarrierRequest& request, const Entry& entry) const;

  absl::flat_hash_map<std::string, Entry> entries_;
  absl::flat_hash_set<std::string> live_ids_;
  absl::flat_hash_set<std::string> unrepeatable_;
  BarrierLimits limits_;
};

}  // namespace muster
