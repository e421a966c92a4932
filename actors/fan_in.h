// One request to many actors, one answer: what the coordinator does to list every open barrier
// or every key-value directory's size.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include <caf/error.hpp>
#include <caf/typed_response_promise.hpp>

namespace muster {

// Sends `request` to every actor of `actors` and returns a promise of one Response: `add(merged,
// part)` folds in each Part answered, `finish(merged)` runs once every actor answered; an actor
// that fails (it stopped meanwhile) is skipped. Call it from a handler of `self` and return the
// promise. With no actors it answers at once.
template <class Response, class Part, class Self, class Actor, class Request, class Add,
          class Finish>
caf::typed_response_promise<Response> FanIn(Self* self, const std::vector<Actor>& actors,
                                            const Request& request, Add add, Finish finish) {
  struct Collection {
    caf::typed_response_promise<Response> promise;
    Response merged;
    size_t left = 0;
  };
  auto collection = std::make_shared<Collection>();
  collection->promise = self->template make_response_promise<Response>();
  collection->left = actors.size() + 1;
  auto done = [collection, finish] {
    if (--collection->left > 0) return;
    finish(collection->merged);
    collection->promise.deliver(std::move(collection->merged));
  };
  for (const Actor& actor : actors) {
    self->request(actor, caf::infinite, request)
        .then(
            [collection, add, done](Part& part) {
              add(collection->merged, part);
              done();
            },
            [done](caf::error&) { done(); });
  }
  done();  // the `+ 1` above: answers at once when there are no actors
  return collection->promise;
}

}  // namespace muster
