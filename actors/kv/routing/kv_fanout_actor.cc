#include "muster/actors/kv/routing/kv_fanout_actor.h"

#include <algorithm>
#include <utility>

#include <absl/status/status.h>
#include <caf/response_promise.hpp>
#include <caf/result.hpp>

#include "muster/actors/caf/hardening.h"
#include "muster/actors/caf/placement.h"

namespace muster {
namespace {

struct KvFanOutState {
  static inline const char* name = "muster.kv_fanout";
  std::vector<KvDirectoryActor> directories;
  bool busy = false;
  size_t pending = 0;
  caf::response_promise promise;
  std::vector<proto::KeyValueEntry> entries;
};

using KvFanOutPointer = KvFanOutActor::stateful_pointer<KvFanOutState>;

void Merge(KvFanOutPointer self, proto::GetKeyValueDirResponse& response) {
  for (proto::KeyValueEntry& entry : *response.mutable_kv()) {
    self->state.entries.push_back(std::move(entry));
  }
}
void Merge(KvFanOutPointer, proto::DeleteKeyValueResponse&) {}

template <class Response>
Response Finish(KvFanOutPointer self) {
  Response response;
  if constexpr (std::is_same_v<Response, proto::GetKeyValueDirResponse>) {
    auto& entries = self->state.entries;
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.key() < b.key(); });
    for (proto::KeyValueEntry& entry : entries) *response.add_kv() = std::move(entry);
  }
  return response;
}

// Answers the requester once and quits.
template <class Answer>
void Complete(KvFanOutPointer self, Answer answer) {
  if (!self->state.promise.pending()) return;
  self->state.promise.deliver(std::move(answer));
  self->quit();
}

// Sends `request` to every directory and answers with the merged responses, or the first error.
template <class Response, class Request>
caf::result<Response> AskAll(KvFanOutPointer self, const Request& request) {
  if (self->state.busy) {
    return ToKvError(absl::InternalError("a key-value fan-out actor serves one request only"));
  }
  self->state.busy = true;
  self->state.promise = self->make_response_promise();
  self->state.pending = self->state.directories.size();
  if (self->state.pending == 0) Complete(self, Finish<Response>(self));
  for (const KvDirectoryActor& directory : self->state.directories) {
    self->request(directory, caf::infinite, request)
        .then(
            [=](Response& response) {
              Merge(self, response);
              if (--self->state.pending == 0) Complete(self, Finish<Response>(self));
            },
            [=](caf::error& error) { Complete(self, std::move(error)); });
  }
  return self->state.promise;
}

caf::result<proto::GetKeyValueDirResponse> GetKeyValueDir(
    KvFanOutPointer self, const proto::GetKeyValueDirRequest& request) {
  if (!request.directory_key().empty()) {
    return ToKvError(absl::InvalidArgumentError(
        "a key-value fan-out lists the root only; send directory listings to their directory"));
  }
  return AskAll<proto::GetKeyValueDirResponse>(self, request);
}

caf::result<proto::DeleteKeyValueResponse> DeleteKeyValue(
    KvFanOutPointer self, const proto::DeleteKeyValueRequest& request) {
  if (!request.key().empty() || !request.is_directory()) {
    return ToKvError(absl::InvalidArgumentError(
        "a key-value fan-out deletes the root with is_directory only; send other deletes to "
        "their directory"));
  }
  return AskAll<proto::DeleteKeyValueResponse>(self, request);
}

KvFanOutActor::behavior_type KvFanOutBehavior(KvFanOutPointer self,
                                              std::vector<KvDirectoryActor> directories) {
  HostOnNetworkThread(self);
  DropUnexpectedMessages(self);
  self->state.directories = std::move(directories);
  return {
      [=](const proto::GetKeyValueDirRequest& request) { return GetKeyValueDir(self, request); },
      [=](const proto::DeleteKeyValueRequest& request) { return DeleteKeyValue(self, request); },
  };
}

}  // namespace

KvFanOutActor SpawnKvFanOut(caf::actor_system& system, std::vector<KvDirectoryActor> directories) {
  return system.spawn(KvFanOutBehavior, std::move(directories));
}

}  // namespace muster
