// A googletest fixture that runs actors on CAF's test scheduler with simulated time: nothing
// runs until the test drains the mailboxes, and time moves only through AdvanceTime.
#pragma once

#include <algorithm>

#include <memory>
#include <optional>
#include <vector>

#include <absl/status/statusor.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/vocabulary/message_types.h"

namespace muster::testing {

// The reply to a request sent with DeterministicTest::Send: empty while none arrived.
template <class Response>
using Reply = std::shared_ptr<std::optional<absl::StatusOr<Response>>>;

class DeterministicTest : public ::testing::Test {
 protected:
  DeterministicTest()
      : system_(Init(config_)),
        scheduler_(dynamic_cast<caf::scheduler::test_coordinator&>(system_.scheduler())) {}

  ~DeterministicTest() override {
    for (auto& actor : keep_alive_) caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    Drain();
  }

  // Runs every job until all mailboxes are empty; fires no timer.
  size_t Drain() { return scheduler_.run(); }

  // Moves simulated time forward as it passes for real: each timer fires at its own time, and
  // what it set off runs (drains) before the clock moves on. Returns how many timers fired.
  size_t AdvanceTime(caf::timespan duration) {
    auto& clock = scheduler_.clock();
    const auto end = clock.now() + duration;
    size_t fired = 0;
    while (!clock.schedule().empty() && clock.schedule().begin()->first <= end) {
      const auto next = std::max(clock.schedule().begin()->first, clock.now());
      fired += clock.advance_time(next - clock.now());
      Drain();
    }
    fired += clock.advance_time(end - clock.now());
    Drain();
    return fired;
  }

  // The process does not run for `duration` (stopped, swapped out): the clock jumps, and the
  // timers that came due meanwhile all fire late, at its end.
  size_t Stall(caf::timespan duration) {
    size_t fired = scheduler_.clock().advance_time(duration);
    Drain();
    return fired;
  }

  // Keeps `actor` alive until the test ends, then shuts it down.
  template <class Handle>
  Handle Keep(Handle actor) {
    keep_alive_.push_back(caf::actor_cast<caf::actor>(actor));
    return actor;
  }

  // Sends a request to `dest` from a fresh client actor, drains, and returns the reply slot
  // (empty while the request is still pending).
  template <class Response, class Handle, class... Args>
  Reply<Response> Send(const Handle& dest, Args... args) {
    auto reply = std::make_shared<std::optional<absl::StatusOr<Response>>>();
    auto client = system_.spawn([=](caf::event_based_actor* self) {
      self->request(dest, caf::infinite, args...)
          .then([=](Response& response) { *reply = std::move(response); },
                [=](caf::error& error) { *reply = ToStatus(error); });
    });
    Keep(client);
    Drain();
    return reply;
  }

  // Sends a request and returns its reply, which must have arrived after draining.
  template <class Response, class Handle, class... Args>
  absl::StatusOr<Response> Call(const Handle& dest, Args... args) {
    Reply<Response> reply = Send<Response>(dest, args...);
    if (!reply->has_value()) return absl::InternalError("test: no reply after draining");
    return **reply;
  }

  caf::actor_system_config config_;
  caf::actor_system system_;
  caf::scheduler::test_coordinator& scheduler_;

 private:
  static caf::actor_system_config& Init(caf::actor_system_config& cfg) {
    cfg.set("scheduler.policy", caf::atom("testing"));
    cfg.set("logger.console", caf::atom("none"));
    AddMessageTypes(cfg);
    return cfg;
  }

  std::vector<caf::actor> keep_alive_;
};

}  // namespace muster::testing
