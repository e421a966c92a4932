// The heartbeat deadline FIFO: ordering, lazy deletion, re-watching and compaction.
#include "muster/actors/tasks/heartbeat_deadlines.h"

#include <gtest/gtest.h>

namespace muster {
namespace {

using namespace std::chrono_literals;
using TimePoint = HeartbeatDeadlines::TimePoint;

constexpr TimePoint kStart{std::chrono::seconds(1000)};

std::vector<uint64_t> Incarnations(const std::vector<HeartbeatDeadlines::Expired>& expired) {
  std::vector<uint64_t> out;
  for (const auto& e : expired) out.push_back(e.incarnation);
  return out;
}

TEST(HeartbeatDeadlinesTest, Watch_ExpiresExactlyAtTimeout) {
  HeartbeatDeadlines deadlines(10s);
  deadlines.Watch(0, 1, TaskActor{}, kStart);
  EXPECT_EQ(deadlines.Next(), kStart + 10s);
  EXPECT_TRUE(deadlines.TakeExpired(kStart + 10s - 1ns).empty());
  EXPECT_EQ(Incarnations(deadlines.TakeExpired(kStart + 10s)), std::vector<uint64_t>{1});
  EXPECT_EQ(deadlines.watched(), 0u);
  EXPECT_FALSE(deadlines.Next().has_value());
}

TEST(HeartbeatDeadlinesTest, Beat_MovesOnlyThatTasksDeadline) {
  HeartbeatDeadlines deadlines(10s);
  deadlines.Watch(0, 1, TaskActor{}, kStart);
  deadlines.Watch(1, 2, TaskActor{}, kStart + 1s);
  ASSERT_TRUE(deadlines.Beat(0, 1, kStart + 5s));
  EXPECT_EQ(deadlines.Next(), kStart + 11s);  // b's; a's first record is stale
  EXPECT_EQ(Incarnations(deadlines.TakeExpired(kStart + 14s)), std::vector<uint64_t>{2});
  EXPECT_EQ(Incarnations(deadlines.TakeExpired(kStart + 15s)), std::vector<uint64_t>{1});
}

TEST(HeartbeatDeadlinesTest, Beat_OtherIncarnationOrUnwatched_Rejected) {
  HeartbeatDeadlines deadlines(10s);
  EXPECT_FALSE(deadlines.Beat(0, 1, kStart));
  deadlines.Watch(0, 1, TaskActor{}, kStart);
  EXPECT_FALSE(deadlines.Beat(0, 2, kStart + 1s));
  deadlines.Unwatch(0);
  EXPECT_FALSE(deadlines.Beat(0, 1, kStart + 2s));
  EXPECT_TRUE(deadlines.TakeExpired(kStart + 1h).empty());
  EXPECT_EQ(deadlines.watched(), 0u);
}

TEST(HeartbeatDeadlinesTest, Rewatch_NewIncarnationReplacesTheOldDeadline) {
  HeartbeatDeadlines deadlines(10s);
  deadlines.Watch(0, 1, TaskActor{}, kStart);
  deadlines.Unwatch(0);
  deadlines.Watch(0, 2, TaskActor{}, kStart + 3s);
  EXPECT_TRUE(deadlines.TakeExpired(kStart + 12s).empty());
  EXPECT_EQ(Incarnations(deadlines.TakeExpired(kStart + 13s)), std::vector<uint64_t>{2});
  EXPECT_EQ(deadlines.watched(), 0u);
}

TEST(HeartbeatDeadlinesTest, ManyBeats_RecordsStayProportionalToWatchedTasks) {
  HeartbeatDeadlines deadlines(10s);
  for (int i = 0; i < 100; ++i) deadlines.Watch(static_cast<uint32_t>(i), 1, TaskActor{}, kStart);
  for (int round = 1; round <= 1000; ++round) {
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(deadlines.Beat(static_cast<uint32_t>(i), 1, kStart + round * 1ms));
    }
  }
  EXPECT_LE(deadlines.records(), 2u * 100 + 1024 + 1);
  EXPECT_EQ(deadlines.Next(), kStart + 1000ms + 10s);
  EXPECT_TRUE(deadlines.TakeExpired(kStart + 1000ms + 10s - 1ns).empty());
  EXPECT_EQ(deadlines.TakeExpired(kStart + 1000ms + 10s).size(), 100u);
}

}  // namespace
}  // namespace muster
