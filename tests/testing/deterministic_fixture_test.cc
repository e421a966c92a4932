// The deterministic fixture itself: timers fire only when the test advances simulated time,
// and requests are answered only when the test drains mailboxes.
#include "tests/testing/deterministic_fixture.h"

#include <chrono>
#include <vector>

#include <gtest/gtest.h>
#include <caf/atom.hpp>
#include <caf/stateful_actor.hpp>

#include "muster/messages/vocabulary/atoms.h"

namespace muster::testing {
namespace {

using namespace std::chrono_literals;

struct EchoState {
  std::vector<caf::response_promise> waiting;
};

// Answers `deadline_atom` requests with 42, 5 s after the first one arrived.
caf::behavior DelayedEcho(caf::stateful_actor<EchoState>* self) {
  return {
      [=](deadline_atom) {
        if (self->state.waiting.empty()) self->delayed_send(self, 5s, retry_atom::value);
        self->state.waiting.push_back(self->make_response_promise());
        return self->state.waiting.back();
      },
      [=](retry_atom) {
        for (auto& promise : self->state.waiting) promise.deliver(int32_t{42});
        self->state.waiting.clear();
      },
  };
}

class FixtureTest : public DeterministicTest {};

TEST_F(FixtureTest, Timer_FiresOnlyWhenTimeAdvancesPastIt) {
  auto echo = Keep(system_.spawn(DelayedEcho));
  Reply<int32_t> reply = Send<int32_t>(echo, deadline_atom::value);
  EXPECT_FALSE(reply->has_value());
  AdvanceTime(4999ms);
  EXPECT_FALSE(reply->has_value());
  AdvanceTime(1ms);
  ASSERT_TRUE(reply->has_value());
  ASSERT_TRUE(reply->value().ok());
  EXPECT_EQ(reply->value().value(), 42);
}

TEST_F(FixtureTest, RequestToDeadActor_FailsUnavailable) {
  auto echo = system_.spawn(DelayedEcho);
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
  Drain();
  auto result = Call<int32_t>(echo, deadline_atom::value);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace muster::testing
