// How the agent actor forwards calls to the leader (internal to net/agent/actor): each call is
// kept until answered, with its own deadline, so that a lost leader fails it at once (or, while
// RECONNECTING, re-sends it once the leader is back); calls made before the agent has a leader
// wait for one.
#pragma once

#include <functional>
#include <utility>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <caf/duration.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/net/agent/actor/agent_state.h"

namespace muster {

// Call deadlines (agent_calls.cc): (re)starts the deadline of call `id` for an attempt sent
// now (nothing for an infinite timeout), and fails the calls whose deadline passed (the timer:
// (deadline_atom)); while reconnecting an expired call waits for its re-send instead.
void StartDeadline(AgentPointer self, uint64_t id, caf::duration timeout);
void ExpireCalls(AgentPointer self);

// Makes a call to the leader with `send` (which returns the request's response handle, and
// may be called again to re-send the call after a reconnect) and calls `on_result` exactly
// once: with the reply, the error, or Unavailable as soon as the leader is lost for good (CAF
// never fails a request to a dead node).
template <class Response, class Send>
void CallThrough(AgentPointer self, AgentActorState::Pending info,
                 std::function<void(absl::StatusOr<Response>)> on_result, Send send) {
  auto& st = self->state;
  if (!HasLeader(self)) return on_result(NoLeader(self));
  uint64_t id = st.next_call++;
  info.fail = [on_result](const caf::error& error) { on_result(ToStatus(error)); };
  info.send = [self, id, on_result, send] {
    auto it = self->state.pending.find(id);
    if (it == self->state.pending.end()) return;
    uint64_t attempt = ++it->second.attempt;
    StartDeadline(self, id, it->second.timeout);
    auto current = [self, id, attempt]() -> AgentActorState::Pending* {
      auto it = self->state.pending.find(id);
      if (it == self->state.pending.end() || it->second.attempt != attempt) return nullptr;
      return &it->second;
    };
    // Stale answers (an older attempt of a re-sent call) are ignored; while reconnecting,
    // errors too (the lost leader's, or its connection's): the call is re-sent instead.
    send().then(
        [self, id, current, on_result](Response& response) {
          if (current() == nullptr) return;
          self->state.call_deadlines.Remove(id);
          self->state.pending.erase(id);
          on_result(std::move(response));
        },
        [self, id, current](caf::error& error) {
          AgentActorState::Pending* call = current();
          if (call == nullptr || Reconnecting(self)) return;
          // Bounced by the leader's node: the actor it was for stopped, as a leader's do when it
          // stops or steps down. Left for the reconnect to re-send, or to fail with the leader's
          // loss (or the call's own deadline) as any call in flight then.
          if (error == caf::sec::request_receiver_down) return;
          auto fail = std::move(call->fail);
          self->state.call_deadlines.Remove(id);
          self->state.pending.erase(id);
          fail(error);
        });
  };
  auto& call = st.pending.emplace(id, std::move(info)).first->second;
  if (!Reconnecting(self)) call.send();  // else sent once the leader is back
}

// CallThrough with `request` sent straight to the leader. A finite `timeout` is the agent's
// own deadline (one timer for all calls instead of one of CAF's per request).
template <class Response, class... Request>
void CallLeader(AgentPointer self, caf::duration timeout, AgentActorState::Pending info,
                std::function<void(absl::StatusOr<Response>)> on_result,
                const Request&... request) {
  info.timeout = timeout;
  CallThrough<Response>(self, std::move(info), std::move(on_result), [self, request...] {
    return self->request(self->state.leader, caf::infinite, request...);
  });
}

// Forwards `request` to the leader and answers the caller with the outcome; `done` sees the
// outcome first. With `via` (a local actor taking (request, leader)), the request goes there.
template <class Response, class Request, class Via = caf::actor>
caf::result<Response> Forward(AgentPointer self, const Request& request, caf::duration timeout,
                              AgentActorState::Pending info = {},
                              std::function<void(const absl::StatusOr<Response>&)> done = nullptr,
                              const Via& via = {}) {
  if (!HasLeader(self)) return ToError(NoLeader(self));
  if (absl::Status size = CheckRequestSize(self, request); !size.ok()) return ToError(size);
  auto promise = self->make_response_promise<Response>();
  auto on_result = [promise, done](absl::StatusOr<Response> result) mutable {
    if (done) done(result);
    if (result.ok()) {
      promise.deliver(*std::move(result));
    } else {
      promise.deliver(ToError(result.status()));
    }
  };
  if (via) {
    CallThrough<Response>(self, std::move(info), std::move(on_result),
                          [self, via, timeout, request] {
                            return self->request(via, timeout, request, self->state.leader);
                          });
  } else {
    CallLeader<Response>(self, timeout, std::move(info), std::move(on_result), request);
  }
  return promise;
}

// Runs `then` once the agent has a leader to talk to: at once when it has one, else after
// connecting (and presenting the job token) without registering the task; `then` gets the
// connect error when that fails within the rpc timeout.
void WithLeader(AgentPointer self, std::function<void(const absl::Status&)> then);

// A key-value call that arrived before the agent had a leader: answered by sending the same
// request to this actor again once WithLeader succeeded. In ERROR (the leader was lost) it fails
// at once with that error, as the calls pending at the loss did, instead of connecting again:
// a call made just before the loss may reach the agent just after it.
template <class Response, class... Request>
caf::result<Response> AfterLeader(AgentPointer self, const Request&... request) {
  if (self->state.phase == AgentPhase::kError) return ToError(self->state.error);
  auto promise = self->make_response_promise<Response>();
  WithLeader(self, [self, promise, request...](const absl::Status& status) mutable {
    if (!status.ok()) {
      promise.deliver(ToError(status));
      return;
    }
    self->request(caf::actor_cast<AgentControlActor>(self), caf::infinite, request...)
        .then([promise](Response& response) mutable { promise.deliver(std::move(response)); },
              [promise](caf::error& error) mutable { promise.deliver(std::move(error)); });
  });
  return promise;
}

}  // namespace muster
