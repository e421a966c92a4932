// ProcessFence: a fenced process is refused with what it ran and why; others pass; the oldest
// entries go when it is full.
#include "muster/actors/supervision/process_fence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/task_name.h"

namespace muster {
namespace {

using ::testing::HasSubstr;

caf::node_id Node(uint32_t pid) {
  return caf::make_node_id(pid, caf::node_id::default_data::host_id_type{});
}

ProcessFence::Replaced Ran(int id, int64_t generation, int64_t round) {
  return {.task = MakeTask("worker", id), .generation = generation, .round = round};
}

TEST(ProcessFenceTest, AFencedProcessIsRefusedWithWhatItRan) {
  ProcessFence fence;
  fence.Fence(Node(11), Ran(2, 0, 0));
  EXPECT_TRUE(fence.IsFenced(Node(11)));
  absl::Status restarted = fence.Check(Node(11), 0);
  EXPECT_EQ(restarted.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(restarted.message(),
              HasSubstr("ran /job:worker/task:2 as generation 0 of round 0, and "
                        "/job:worker/task:2 was restarted since"));
  absl::Status new_round = fence.Check(Node(11), 1);
  EXPECT_THAT(new_round.message(), HasSubstr("restarted every task since (round 1)"));
  EXPECT_TRUE(fence.Check(Node(12), 1).ok());
}

TEST(ProcessFenceTest, ANullNodeIsNeverFenced) {
  ProcessFence fence;
  fence.Fence(caf::node_id{}, Ran(0, 0, 0));
  EXPECT_EQ(fence.size(), 0u);
  EXPECT_TRUE(fence.Check(caf::node_id{}, 0).ok());
}

TEST(ProcessFenceTest, FencingAgainKeepsWhatTheNodeRan_TheOldestGoWhenFull) {
  ProcessFence fence(2);
  fence.Fence(Node(1), Ran(0, 0, 0));
  fence.Fence(Node(1), Ran(0, 3, 1));  // a later generation that never connected
  EXPECT_EQ(fence.size(), 1u);
  EXPECT_THAT(fence.Check(Node(1), 1).message(), HasSubstr("generation 0 of round 0"));
  fence.Fence(Node(2), Ran(1, 0, 0));
  fence.Fence(Node(3), Ran(2, 0, 0));
  EXPECT_EQ(fence.size(), 2u);
  EXPECT_FALSE(fence.IsFenced(Node(1)));
  EXPECT_TRUE(fence.IsFenced(Node(2)));
  EXPECT_TRUE(fence.IsFenced(Node(3)));
}

}  // namespace
}  // namespace muster
