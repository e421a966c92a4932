// CallDeadlines: one timer for the earliest deadline, calls expire in deadline order, answered
// calls never expire, and a timer is asked for again only when needed.
#include "muster/net/agent/calls/call_deadlines.h"

#include <chrono>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace muster {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using TimePoint = CallDeadlines::TimePoint;

const TimePoint kT0{std::chrono::seconds(100)};

TEST(CallDeadlinesTest, FirstCall_AsksForATimerAtItsDeadline) {
  CallDeadlines deadlines;
  EXPECT_EQ(deadlines.Add(1, kT0 + 10s), kT0 + 10s);
  EXPECT_EQ(deadlines.size(), 1u);
}

TEST(CallDeadlinesTest, LaterCalls_NeedNoNewTimer_EarlierOnesDo) {
  CallDeadlines deadlines;
  ASSERT_TRUE(deadlines.Add(1, kT0 + 10s));
  EXPECT_EQ(deadlines.Add(2, kT0 + 11s), std::nullopt);
  EXPECT_EQ(deadlines.Add(3, kT0 + 10s), std::nullopt);
  EXPECT_EQ(deadlines.Add(4, kT0 + 5s), kT0 + 5s);
}

TEST(CallDeadlinesTest, TimerFires_TakesTheDueCallsInDeadlineOrder_AndAsksForTheNext) {
  CallDeadlines deadlines;
  deadlines.Add(1, kT0 + 10s);
  deadlines.Add(2, kT0 + 12s);
  deadlines.Add(3, kT0 + 11s);
  deadlines.Add(4, kT0 + 20s);
  std::optional<TimePoint> rearm;
  EXPECT_THAT(deadlines.TakeExpired(kT0 + 12s, rearm), ElementsAre(1, 3, 2));
  EXPECT_EQ(rearm, kT0 + 20s);
  EXPECT_EQ(deadlines.size(), 1u);
  EXPECT_THAT(deadlines.TakeExpired(kT0 + 20s, rearm), ElementsAre(4));
  EXPECT_EQ(rearm, std::nullopt);
  EXPECT_EQ(deadlines.size(), 0u);
}

TEST(CallDeadlinesTest, AnsweredCalls_NeverExpire) {
  CallDeadlines deadlines;
  deadlines.Add(1, kT0 + 10s);
  deadlines.Add(2, kT0 + 10s);
  deadlines.Remove(1);
  deadlines.Remove(99);  // unknown: ignored
  std::optional<TimePoint> rearm;
  EXPECT_THAT(deadlines.TakeExpired(kT0 + 10s, rearm), ElementsAre(2));
}

TEST(CallDeadlinesTest, AllAnswered_TimerFindsNothing_AndNoTimerIsNeeded) {
  CallDeadlines deadlines;
  deadlines.Add(1, kT0 + 10s);
  deadlines.Remove(1);
  std::optional<TimePoint> rearm = kT0;
  EXPECT_THAT(deadlines.TakeExpired(kT0 + 10s, rearm), IsEmpty());
  EXPECT_EQ(rearm, std::nullopt);
  // The next call needs a timer again.
  EXPECT_EQ(deadlines.Add(2, kT0 + 30s), kT0 + 30s);
}

TEST(CallDeadlinesTest, AnEarlierTimerFires_TheLaterArmedOneStillCovers) {
  CallDeadlines deadlines;
  deadlines.Add(1, kT0 + 20s);  // timer at +20
  deadlines.Add(2, kT0 + 5s);   // timer at +5 as well
  std::optional<TimePoint> rearm;
  EXPECT_THAT(deadlines.TakeExpired(kT0 + 5s, rearm), ElementsAre(2));
  // The +5 timer was the earliest armed: the next deadline (+20) gets one.
  EXPECT_EQ(rearm, kT0 + 20s);
  EXPECT_THAT(deadlines.TakeExpired(kT0 + 20s, rearm), ElementsAre(1));
}

}  // namespace
}  // namespace muster
