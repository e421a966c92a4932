#include "muster/net/transport/wire/frame_assembler.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace muster {
namespace {

using A = FrameAssembler;

TEST(FrameAssemblerTest, SmallPayloadsAreReadAtOnceLargeOnesAssembled) {
  EXPECT_FALSE(A::Assembles(32));
  EXPECT_FALSE(A::Assembles(A::kPresizedBytes));
  EXPECT_TRUE(A::Assembles(A::kPresizedBytes + 1));
}

// What a trickling peer costs is what it sent, not what it announced: the first read of an
// 8 MiB payload is 4 KiB, and the buffer holds only the bytes that came.
TEST(FrameAssemblerTest, AnnouncedEightMiB_FirstChunkIsFourKiBAndNothingReserved) {
  A assembler;
  assembler.Start(8u << 20);
  EXPECT_TRUE(assembler.active());
  EXPECT_EQ(assembler.NextChunk(), A::kFirstChunkBytes);
  EXPECT_EQ(assembler.received(), 0u);
  EXPECT_EQ(assembler.payload().capacity(), 0u);
  std::string byte(1, 'x');
  EXPECT_FALSE(assembler.Append(byte));
  EXPECT_EQ(assembler.received(), 1u);
  EXPECT_LE(assembler.payload().capacity(), 2u * A::kFirstChunkBytes);
}

// Chunks grow with what arrived (doubling), up to 64 KiB, and the last one is what is left.
TEST(FrameAssemblerTest, ChunksDoubleWithWhatArrivedUpToTheMaximumThenTheRest) {
  const size_t total = 300'000;
  A assembler;
  assembler.Start(total);
  std::vector<size_t> chunks;
  std::string sent;
  bool complete = false;
  for (int i = 0; i < 100 && !complete; ++i) {
    size_t n = assembler.NextChunk();
    chunks.push_back(n);
    std::string chunk(n, static_cast<char>('a' + i % 26));
    sent += chunk;
    complete = assembler.Append(chunk);
  }
  ASSERT_TRUE(complete);
  std::vector<size_t> expected = {4096, 4096, 8192, 16384, 32768, 65536, 65536, 65536};
  expected.push_back(total - 262144);
  EXPECT_EQ(chunks, expected);
  EXPECT_EQ(std::string(assembler.payload().begin(), assembler.payload().end()), sent);
  EXPECT_LE(assembler.payload().capacity(), total);  // never more than announced
}

TEST(FrameAssemblerTest, Reset_FreesThePayloadAndGoesIdle) {
  A assembler;
  assembler.Start(100'000);
  assembler.Append(std::string(4096, 'x'));
  assembler.Reset();
  EXPECT_FALSE(assembler.active());
  EXPECT_EQ(assembler.received(), 0u);
  EXPECT_EQ(assembler.payload().capacity(), 0u);
  assembler.Start(20'000);  // reusable
  EXPECT_EQ(assembler.NextChunk(), A::kFirstChunkBytes);
}

}  // namespace
}  // namespace muster
