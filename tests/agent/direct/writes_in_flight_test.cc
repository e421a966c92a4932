// WritesInFlight: numbers writes 1, 2, ... and names the lowest one not ended, whatever order
// the writes end in; an unknown number ends nothing; threads may start and end writes at once.
#include "muster/net/agent/direct/writes_in_flight.h"

#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace muster {
namespace {

TEST(WritesInFlightTest, NumbersWritesInOrder_EachNamingItselfWhenNoneIsInFlight) {
  WritesInFlight writes;
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    WritesInFlight::Started write = writes.Start();
    EXPECT_EQ(write.seq, seq);
    EXPECT_EQ(write.answered_below, seq);
    writes.End(write.seq);
  }
}

TEST(WritesInFlightTest, AnsweredBelow_IsTheLowestNotEnded_WhateverOrderTheyEndIn) {
  WritesInFlight writes;
  uint64_t first = writes.Start().seq;              // 1
  uint64_t second = writes.Start().seq;             // 2
  EXPECT_EQ(writes.Start().answered_below, first);  // 3, with 1 and 2 in flight
  writes.End(second);
  EXPECT_EQ(writes.Start().answered_below, first);  // 4: 1 is still in flight
  writes.End(first);
  WritesInFlight::Started fifth = writes.Start();
  EXPECT_EQ(fifth.seq, 5u);
  EXPECT_EQ(fifth.answered_below, 3u);  // 3 and 4 were never ended
}

TEST(WritesInFlightTest, EndOfAnUnknownOrEndedWrite_ChangesNothing) {
  WritesInFlight writes;
  uint64_t first = writes.Start().seq;
  writes.End(99);
  writes.End(first);
  writes.End(first);
  uint64_t second = writes.Start().seq;
  writes.End(0);
  EXPECT_EQ(writes.Start().answered_below, second);
}

TEST(WritesInFlightTest, ThreadsStartingAndEndingAtOnce_GetDistinctNumbers_AllEnded) {
  WritesInFlight writes;
  constexpr int kThreads = 4;
  constexpr int kWrites = 1000;
  std::vector<std::vector<uint64_t>> seqs(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&writes, &mine = seqs[t]] {
      for (int i = 0; i < kWrites; ++i) {
        WritesInFlight::Started write = writes.Start();
        mine.push_back(write.seq);
        writes.End(write.seq);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<bool> seen(kThreads * kWrites + 1, false);
  for (const auto& mine : seqs) {
    for (uint64_t seq : mine) {
      ASSERT_GE(seq, 1u);
      ASSERT_LE(seq, static_cast<uint64_t>(kThreads * kWrites));
      EXPECT_FALSE(seen[seq]) << seq;
      seen[seq] = true;
    }
  }
  WritesInFlight::Started last = writes.Start();
  EXPECT_EQ(last.seq, static_cast<uint64_t>(kThreads * kWrites + 1));
  EXPECT_EQ(last.answered_below, last.seq);  // every earlier write ended
}

}  // namespace
}  // namespace muster
