// A stand-in for the leader's coordinator that records what an agent sends it: registrations,
// key-value writes, watches. It answers with fixed replies, or holds some requests unanswered
// (a leader that dies with calls in flight). Untyped; cast to CoordinatorActor for an agent.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <absl/status/status.h>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/vocabulary/interfaces.h"

namespace muster::testing {

struct RecordingCoordinator {
  // How it answers.
  uint64_t leader_incarnation = 5;
  int64_t heartbeat_timeout_ms = 0;  // RegisterTaskResponse.heartbeat_timeout_ms (0: none)
  bool hold_inserts = false;         // never answer InsertKeyValueRequest
  int64_t watch_revision = 10;       // WatchKeyResponse.revision
  absl::Status refuse_reconnect;     // the answer to a register with `reconnect`
  absl::Status refuse_watch_resume;  // the answer to a watch with `from_revision`
  // What it received.
  std::vector<proto::RegisterTaskRequest> registers;
  std::vector<proto::InsertKeyValueRequest> inserts;
  std::vector<proto::UpdateKeyValueRequest> updates;
  std::vector<proto::DeleteKeyValueRequest> deletes;
  std::vector<proto::IncrementKeyValueRequest> increments;
  std::vector<proto::CompareAndSwapRequest> swaps;
  std::vector<proto::GetKeyValueRequest> gets;
  std::vector<proto::WatchKeyRequest> watches;
  int heartbeats = 0;
  std::vector<proto::ReportErrorToServiceRequest> reports;
  KvWatcherActor watcher;  // of the last watch
  std::vector<caf::response_promise> held;
};

// Spawns the stand-in; `log` says how it answers and records what it got.
inline CoordinatorActor SpawnRecordingCoordinator(caf::actor_system& system,
                                                  std::shared_ptr<RecordingCoordinator> log) {
  caf::actor actor = system.spawn([log](caf::event_based_actor* self) -> caf::behavior {
    return {
        [=](const proto::RegisterTaskRequest& request,
            const AgentActor&) -> caf::result<proto::RegisterTaskResponse> {
          log->registers.push_back(request);
          if (request.reconnect() && !log->refuse_reconnect.ok()) {
            return ToError(log->refuse_reconnect);
          }
          proto::RegisterTaskResponse response;
          response.set_leader_incarnation(log->leader_incarnation);
          response.set_heartbeat_timeout_ms(log->heartbeat_timeout_ms);
          return response;
        },
        [=](const proto::ReportErrorToServiceRequest& request) {
          log->reports.push_back(request);
          return proto::ReportErrorToServiceResponse{};
        },
        [=](const proto::HeartbeatRequest&) {
          ++log->heartbeats;
          proto::HeartbeatResponse response;
          response.set_leader_incarnation(log->leader_incarnation);
          return response;
        },
        [=](const proto::InsertKeyValueRequest& request)
            -> caf::result<proto::InsertKeyValueResponse> {
          log->inserts.push_back(request);
          if (!log->hold_inserts) return proto::InsertKeyValueResponse{};
          log->held.push_back(self->make_response_promise());
          return log->held.back();
        },
        [=](const proto::UpdateKeyValueRequest& request) {
          log->updates.push_back(request);
          return proto::UpdateKeyValueResponse{};
        },
        [=](const proto::DeleteKeyValueRequest& request) {
          log->deletes.push_back(request);
          return proto::DeleteKeyValueResponse{};
        },
        [=](const proto::IncrementKeyValueRequest& request) {
          log->increments.push_back(request);
          proto::IncrementKeyValueResponse response;
          response.mutable_kv()->set_value("1");
          return response;
        },
        [=](const proto::CompareAndSwapRequest& request) {
          log->swaps.push_back(request);
          proto::CompareAndSwapResponse response;
          response.set_succeeded(true);
          return response;
        },
        [=](const proto::GetKeyValueRequest& request) -> caf::result<proto::GetKeyValueResponse> {
          log->gets.push_back(request);
          log->held.push_back(self->make_response_promise());
          return log->held.back();
        },
        [=](const proto::WatchKeyRequest& request,
            const KvWatcherActor& watcher) -> caf::result<proto::WatchKeyResponse> {
          log->watches.push_back(request);
          log->watcher = watcher;
          if (request.from_revision() > 0 && !log->refuse_watch_resume.ok()) {
            return ToError(log->refuse_watch_resume);
          }
          proto::WatchKeyResponse response;
          response.set_revision(log->watch_revision);
          return response;
        },
    };
  });
  return caf::actor_cast<CoordinatorActor>(actor);
}

}  // namespace muster::testing
