// The reply sink: the reply (a response or an error) reaches the callback once, at once on the
// thread that delivers it; a receiver that is gone bounces the request to it; a request dropped
// unanswered completes with the error the caller gave. The request's sender is the address
// RequestWithSink returns; AwaitExit waits for actors to end.
#include "muster/actors/caf/reply_sink.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>

#include "muster/messages/status/status_codec.h"
#include "tests/testing/deterministic_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::testing::ElementsAre;

// What the callback saw: the string answered, or the status of an error.
struct Seen {
  std::vector<std::string> values;
  std::vector<absl::Status> errors;
};

ReplyCallback Record(Seen& seen) {
  return [&seen](caf::message& reply) {
    if (reply.match_elements<std::string>()) {
      seen.values.push_back(reply.get_as<std::string>(0));
    } else if (reply.match_elements<caf::error>()) {
      seen.errors.push_back(ToStatus(reply.get_as<caf::error>(0)));
    } else {
      seen.errors.push_back(absl::InternalError("unexpected reply"));
    }
  };
}

caf::error Unanswered() { return ToError(absl::UnavailableError("agent stopped")); }

class ReplySinkTest : public testing::DeterministicTest {};

TEST_F(ReplySinkTest, Response_ReachesTheCallbackOnce) {
  auto echo = Keep(system_.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](const std::string& text) { return text + "!"; }};
  }));
  Seen seen;
  RequestWithSink(caf::actor_cast<caf::strong_actor_ptr>(echo), caf::make_message("hi"),
                  Record(seen), Unanswered());
  EXPECT_TRUE(seen.values.empty());  // nothing runs before the receiver's turn
  Drain();
  EXPECT_THAT(seen.values, ElementsAre("hi!"));
  EXPECT_TRUE(seen.errors.empty());
}

TEST_F(ReplySinkTest, ErrorAnswer_ReachesTheCallbackAsItsStatus) {
  auto failing = Keep(system_.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](const std::string& key) -> caf::result<std::string> {
      return ToError(absl::NotFoundError("key " + key + " not found"));
    }};
  }));
  Seen seen;
  RequestWithSink(caf::actor_cast<caf::strong_actor_ptr>(failing), caf::make_message("k"),
                  Record(seen), Unanswered());
  Drain();
  ASSERT_EQ(seen.errors.size(), 1u);
  EXPECT_EQ(seen.errors[0], absl::NotFoundError("key k not found"));
}

TEST_F(ReplySinkTest, ReceiverGone_BouncesAsUnavailable) {
  auto gone = system_.spawn([](caf::event_based_actor* self) -> caf::behavior {
    self->quit();
    return {[](const std::string&) {}};
  });
  Drain();
  Seen seen;
  RequestWithSink(caf::actor_cast<caf::strong_actor_ptr>(gone), caf::make_message("k"),
                  Record(seen), Unanswered());
  Drain();
  ASSERT_EQ(seen.errors.size(), 1u);
  EXPECT_EQ(seen.errors[0].code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(seen.errors[0].message(), ::testing::HasSubstr("the receiver"));
  EXPECT_THAT(seen.errors[0].message(), ::testing::Not(::testing::HasSubstr("system_error")));
}

TEST_F(ReplySinkTest, DroppedUnanswered_CompletesWithTheGivenError) {
  // Holds the promise, then quits without delivering it: the request's last reference goes.
  auto dropper = system_.spawn([](caf::event_based_actor* self) -> caf::behavior {
    return {[self](const std::string&) -> caf::result<std::string> {
      auto promise = self->make_response_promise<std::string>();
      self->quit();
      return caf::delegated<std::string>{};
    }};
  });
  Seen seen;
  RequestWithSink(caf::actor_cast<caf::strong_actor_ptr>(dropper), caf::make_message("k"),
                  Record(seen), Unanswered());
  Drain();
  dropper = nullptr;
  Drain();
  ASSERT_EQ(seen.errors.size(), 1u);
  EXPECT_EQ(seen.errors[0], absl::UnavailableError("agent stopped"));
  EXPECT_TRUE(seen.values.empty());
}

TEST_F(ReplySinkTest, ReturnedAddress_IsTheRequestsSender) {
  caf::actor_addr sender;
  auto recorder = Keep(system_.spawn([&sender](caf::event_based_actor* self) -> caf::behavior {
    return {[self, &sender](const std::string& text) {
      sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
      return text;
    }};
  }));
  Seen seen;
  caf::actor_addr call = RequestWithSink(caf::actor_cast<caf::strong_actor_ptr>(recorder),
                                         caf::make_message("hi"), Record(seen), Unanswered());
  Drain();
  ASSERT_TRUE(call);
  EXPECT_EQ(sender, call);
  EXPECT_THAT(seen.values, ElementsAre("hi"));
}

TEST_F(ReplySinkTest, AwaitExit_FalseWhileAnActorLivesTrueOnceAllExited) {
  auto first = system_.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](const std::string&) {}};
  });
  auto second = system_.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](const std::string&) {}};
  });
  Drain();
  EXPECT_FALSE(AwaitExit({first.address(), second.address()}, absl::ZeroDuration()));
  caf::anon_send_exit(first, caf::exit_reason::user_shutdown);
  Drain();
  EXPECT_FALSE(AwaitExit({first.address(), second.address()}, absl::ZeroDuration()));
  caf::anon_send_exit(second, caf::exit_reason::user_shutdown);
  Drain();
  // Both gone: no wait at all, whatever the timeout.
  EXPECT_TRUE(AwaitExit({first.address(), second.address()}, absl::ZeroDuration()));
  EXPECT_TRUE(AwaitExit({}, absl::ZeroDuration()));
}

}  // namespace
}  // namespace muster
