// Requests that stand for many parts (a heartbeat batch, a barrier group) and their answers,
// which list the failed parts by index. GroupReply builds such an answer at the leader;
// AnswerParts unpacks it for the parts' callers on the worker.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include <absl/status/status.h>
#include <caf/typed_response_promise.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

// Parts answered at once and parts answered later by other actors report here; the response
// goes out once every expected part is done, its failures ordered by the parts' indices.
template <class Response>
class GroupReply {
 public:
  using Failure = std::remove_pointer_t<decltype(std::declval<Response>().add_failures())>;

  // One part (the caller's own loop) is expected from the start: call Done() after it.
  explicit GroupReply(caf::typed_response_promise<Response> promise)
      : promise_(std::move(promise)) {}

  Response& response() { return response_; }
  void Expect() { ++waiting_; }
  // Records a failed part; the returned failure may be completed until the next call.
  Failure& Fail(int index, const proto::CoordinatedTask& task, const absl::Status& status) {
    Failure& failure = failures_.emplace_back();
    failure.set_index(index);
    *failure.mutable_task() = task;
    SetStatusFields(status, &failure);
    return failure;
  }
  void Done() {
    if (--waiting_ > 0) return;
    std::sort(failures_.begin(), failures_.end(),
              [](const Failure& a, const Failure& b) { return a.index() < b.index(); });
    for (auto& failure : failures_) *response_.add_failures() = std::move(failure);
    promise_.deliver(std::move(response_));
  }

 private:
  caf::typed_response_promise<Response> promise_;
  Response response_;
  std::vector<Failure> failures_;
  size_t waiting_ = 1;
};

// Answers the caller of every part: the parts listed in `failures` with `status_of(failure)`,
// every other part with `ok`. Failures with an index out of range are ignored.
template <class Ok, class Failures, class StatusOf>
void AnswerParts(std::vector<caf::typed_response_promise<Ok>>& promises, const Failures& failures,
                 const Ok& ok, StatusOf status_of) {
  std::vector<const typename Failures::value_type*> failed(promises.size(), nullptr);
  for (const auto& failure : failures) {
    if (failure.index() >= 0 && static_cast<size_t>(failure.index()) < failed.size()) {
      failed[failure.index()] = &failure;
    }
  }
  for (size_t i = 0; i < failed.size(); ++i) {
    if (failed[i] == nullptr) {
      promises[i].deliver(ok);
    } else {
      promises[i].deliver(ToError(status_of(*failed[i])));
    }
  }
}

}  // namespace muster
