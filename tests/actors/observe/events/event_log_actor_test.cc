// The event log actor on simulated time: events stamped from its clock, WatchEvents answered at
// once, parked until the next event or until its wait is over, its limits, and the batches of
// JSON lines it hands an event writer (a stand-in that records them).
#include "muster/actors/observe/events/event_log_actor.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <absl/strings/str_split.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "muster/messages/task_name.h"
#include "tests/testing/deterministic_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Code = absl::StatusCode;

// 2024-05-01T12:00:00Z
const absl::Time kWallStart = absl::FromUnixSeconds(1714564800);

// What the writer stand-in received, and its held answers.
struct WrittenBatches {
  std::vector<std::string> batches;
  bool hold = false;
  std::vector<caf::typed_response_promise<bool>> held;
};

using release_atom = caf::atom_constant<caf::atom("release")>;
using FakeEventWriter = EventWriterActor::extend<caf::reacts_to<release_atom>>;

FakeEventWriter::behavior_type FakeWriter(FakeEventWriter::pointer self,
                                          std::shared_ptr<WrittenBatches> written) {
  return {
      [=](event_append_atom, const std::string& lines) -> caf::result<bool> {
        written->batches.push_back(lines);
        if (!written->hold) return true;
        auto promise = self->make_response_promise<bool>();
        written->held.push_back(promise);
        return promise;
      },
      [=](release_atom) {
        auto held = std::move(written->held);
        written->held.clear();
        for (auto& promise : held) promise.deliver(true);
      },
  };
}

class EventLogActorTest : public DeterministicTest {
 protected:
  EventLogActor Spawn(EventWriterActor writer = {}) {
    return Keep(SpawnEventLog(system_, {.wall_start = kWallStart, .writer = std::move(writer)}));
  }

  static proto::JobEvent Registered(int id) {
    proto::JobEvent event;
    event.set_kind(proto::TASK_REGISTERED);
    *event.mutable_task() = MakeTask("worker", id);
    event.set_incarnation(100 + id);
    return event;
  }

  void Tell(const EventLogActor& log, proto::JobEvent event) {
    // From an actor of this node, as the coordinator sends them.
    auto sender =
        system_.spawn([log, event](caf::event_based_actor* self) { self->send(log, event); });
    Keep(sender);
    Drain();
  }

  static proto::WatchEventsRequest Watch(int64_t after, int64_t wait_ms = 0, int32_t max = 0) {
    proto::WatchEventsRequest request;
    request.set_after_seq(after);
    request.set_wait_ms(wait_ms);
    request.set_max_events(max);
    return request;
  }
};

TEST_F(EventLogActorTest, Events_StampedWithSeqAndTheClocksTime) {
  EventLogActor log = Spawn();
  Drain();
  Tell(log, Registered(0));
  AdvanceTime(1500ms);
  Tell(log, Registered(1));
  auto reply = Call<proto::WatchEventsResponse>(log, Watch(0));
  ASSERT_THAT(reply, IsOk());
  ASSERT_EQ(reply->events_size(), 2);
  EXPECT_EQ(reply->events(0).seq(), 1);
  EXPECT_EQ(reply->events(1).seq(), 2);
  EXPECT_EQ(TaskName(reply->events(1).task()), "/job:worker/task:1");
  EXPECT_EQ(reply->events(1).incarnation(), 101u);
  EXPECT_EQ(reply->events(0).unix_ms(), 1714564800'000);
  EXPECT_EQ(reply->events(1).unix_ms(), 1714564801'500);
  EXPECT_EQ(reply->events(1).monotonic_ns() - reply->events(0).monotonic_ns(), 1'500'000'000);
  EXPECT_EQ(reply->first_kept_seq(), 1);
  EXPECT_EQ(reply->last_seq(), 2);
}

TEST_F(EventLogActorTest, Watch_EventsAfterTheSeq_AnsweredAtOnceAtMostMax) {
  EventLogActor log = Spawn();
  for (int i = 0; i < 5; ++i) Tell(log, Registered(i));
  auto reply = Call<proto::WatchEventsResponse>(log, Watch(1, 10'000, 2));
  ASSERT_THAT(reply, IsOk());
  ASSERT_EQ(reply->events_size(), 2);
  EXPECT_EQ(reply->events(0).seq(), 2);
  EXPECT_EQ(reply->events(1).seq(), 3);
  EXPECT_EQ(reply->last_seq(), 5);
}

TEST_F(EventLogActorTest, Watch_NothingNewNoWait_EmptyAtOnce) {
  EventLogActor log = Spawn();
  auto reply = Call<proto::WatchEventsResponse>(log, Watch(0));
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->events_size(), 0);
  EXPECT_EQ(reply->first_kept_seq(), 1);
  EXPECT_EQ(reply->last_seq(), 0);
}

TEST_F(EventLogActorTest, Watch_Parked_AnsweredByTheNextEvent) {
  EventLogActor log = Spawn();
  Tell(log, Registered(0));
  Reply<proto::WatchEventsResponse> waiting =
      Send<proto::WatchEventsResponse>(log, Watch(1, 10'000));
  AdvanceTime(3s);
  EXPECT_FALSE(waiting->has_value());
  Tell(log, Registered(1));
  ASSERT_TRUE(waiting->has_value());
  ASSERT_THAT(**waiting, IsOk());
  ASSERT_EQ((**waiting)->events_size(), 1);
  EXPECT_EQ((**waiting)->events(0).seq(), 2);
  EXPECT_EQ((**waiting)->events(0).unix_ms(), 1714564803'000);
  AdvanceTime(10s);  // its timer finds nothing to answer
}

TEST_F(EventLogActorTest, Watch_Parked_EmptyWhenItsWaitIsOver) {
  EventLogActor log = Spawn();
  Reply<proto::WatchEventsResponse> waiting =
      Send<proto::WatchEventsResponse>(log, Watch(0, 2'000));
  AdvanceTime(1999ms);
  EXPECT_FALSE(waiting->has_value());
  AdvanceTime(1ms);
  ASSERT_TRUE(waiting->has_value());
  ASSERT_THAT(**waiting, IsOk());
  EXPECT_EQ((**waiting)->events_size(), 0);
  EXPECT_EQ((**waiting)->last_seq(), 0);
}

TEST_F(EventLogActorTest, Watch_SeveralParked_AllAnsweredByOneEvent) {
  EventLogActor log = Spawn();
  auto a = Send<proto::WatchEventsResponse>(log, Watch(0, 60'000));
  auto b = Send<proto::WatchEventsResponse>(log, Watch(0, 1'000));
  Tell(log, Registered(0));
  ASSERT_TRUE(a->has_value() && b->has_value());
  EXPECT_EQ((**a)->events_size(), 1);
  EXPECT_EQ((**b)->events_size(), 1);
}

TEST_F(EventLogActorTest, Watch_AheadOfTheLog_AnsweredAtOnceWithItsLastSeq) {
  EventLogActor log = Spawn();
  Tell(log, Registered(0));
  auto reply = Call<proto::WatchEventsResponse>(log, Watch(40, 10'000));
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->events_size(), 0);
  EXPECT_EQ(reply->last_seq(), 1);
}

TEST_F(EventLogActorTest, Watch_LostEvents_FirstKeptSeqSaysSo) {
  auto log = Keep(SpawnEventLog(system_, {.wall_start = kWallStart, .capacity = 3}));
  for (int i = 0; i < 5; ++i) Tell(log, Registered(i));
  auto reply = Call<proto::WatchEventsResponse>(log, Watch(1));
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->first_kept_seq(), 3);
  ASSERT_EQ(reply->events_size(), 3);
  EXPECT_EQ(reply->events(0).seq(), 3);
}

TEST_F(EventLogActorTest, Watch_OutOfRange_InvalidArgumentSayingWhatToDo) {
  EventLogActor log = Spawn();
  EXPECT_THAT(Call<proto::WatchEventsResponse>(log, Watch(-1)),
              StatusIs(Code::kInvalidArgument, HasSubstr("none may be negative")));
  EXPECT_THAT(Call<proto::WatchEventsResponse>(log, Watch(0, -5)),
              StatusIs(Code::kInvalidArgument, HasSubstr("wait_ms -5")));
  EXPECT_THAT(Call<proto::WatchEventsResponse>(log, Watch(0, 0, -1)),
              StatusIs(Code::kInvalidArgument, HasSubstr("max_events -1")));
  EXPECT_THAT(Call<proto::WatchEventsResponse>(log, Watch(0, 60'001)),
              StatusIs(Code::kInvalidArgument, HasSubstr("waits at most 60000 ms")));
  EXPECT_THAT(Call<proto::WatchEventsResponse>(log, Watch(0, 0, 1025)),
              StatusIs(Code::kInvalidArgument, HasSubstr("at most 1024 events")));
  EXPECT_THAT(Call<proto::WatchEventsResponse>(log, Watch(0, 0, 1024)), IsOk());
  EXPECT_FALSE(Send<proto::WatchEventsResponse>(log, Watch(0, 60'000))->has_value());  // waits
}

TEST_F(EventLogActorTest, Watch_MoreThan1024Waiting_ResourceExhausted) {
  EventLogActor log = Spawn();
  std::vector<Reply<proto::WatchEventsResponse>> waiting;
  for (size_t i = 0; i < kMaxParkedWatches; ++i) {
    waiting.push_back(Send<proto::WatchEventsResponse>(log, Watch(0, 60'000)));
  }
  EXPECT_THAT(Call<proto::WatchEventsResponse>(log, Watch(0, 60'000)),
              StatusIs(Code::kResourceExhausted, HasSubstr("wait_ms 0")));
  Tell(log, Registered(0));
  for (const auto& reply : waiting) ASSERT_TRUE(reply->has_value());
  EXPECT_FALSE(Send<proto::WatchEventsResponse>(log, Watch(1, 60'000))->has_value());  // room
}

TEST_F(EventLogActorTest, Writer_OneBatchInFlightTheRestTravelTogether) {
  auto written = std::make_shared<WrittenBatches>();
  written->hold = true;
  auto writer = Keep(system_.spawn(FakeWriter, written));
  EventLogActor log = Spawn(caf::actor_cast<EventWriterActor>(writer));
  Tell(log, Registered(0));
  Tell(log, Registered(1));
  Tell(log, Registered(2));
  ASSERT_EQ(written->batches.size(), 1u);
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(written->batches[0], '\n')).size(), 2u);
  EXPECT_THAT(written->batches[0], HasSubstr("\"seq\":1,"));
  caf::anon_send(writer, release_atom::value);
  Drain();
  ASSERT_EQ(written->batches.size(), 2u);
  EXPECT_THAT(written->batches[1], HasSubstr("\"seq\":2,"));
  EXPECT_THAT(written->batches[1], HasSubstr("\"seq\":3,"));
  EXPECT_THAT(written->batches[1], HasSubstr("\"task\":\"/job:worker/task:2\""));
  EXPECT_EQ(written->batches[1].back(), '\n');
}

TEST_F(EventLogActorTest, Exit_AnswersTheParkedWritesWhatIsPendingThenStops) {
  auto written = std::make_shared<WrittenBatches>();
  written->hold = true;
  auto writer = Keep(system_.spawn(FakeWriter, written));
  EventLogActor log = SpawnEventLog(
      system_, {.wall_start = kWallStart, .writer = caf::actor_cast<EventWriterActor>(writer)});
  Tell(log, Registered(0));
  Tell(log, Registered(1));  // pending behind the first batch
  auto waiting = Send<proto::WatchEventsResponse>(log, Watch(2, 60'000));
  caf::anon_send_exit(log, caf::exit_reason::user_shutdown);
  Drain();
  ASSERT_TRUE(waiting->has_value());
  EXPECT_THAT(**waiting, IsOk());
  caf::anon_send(writer, release_atom::value);
  Drain();
  ASSERT_EQ(written->batches.size(), 2u);
  EXPECT_THAT(written->batches[1], HasSubstr("\"seq\":2,"));
  caf::anon_send(writer, release_atom::value);
  Drain();
  // The log stopped (and stopped its writer): a call to it fails.
  EXPECT_THAT(Call<proto::WatchEventsResponse>(log, Watch(0)), StatusIs(Code::kUnavailable));
}

}  // namespace
}  // namespace muster::testing
