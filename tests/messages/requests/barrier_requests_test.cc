#include "muster/messages/requests/barrier_requests.h"

#include <gtest/gtest.h>

#include "muster/messages/requests/wire_timeouts.h"
#include "muster/messages/task_name.h"

namespace muster::requests {
namespace {

TEST(BarrierRequestsTest, BarrierEncodesNoTimeoutAsTheLongest) {
  proto::BarrierRequest forever = Barrier("sync", absl::InfiniteDuration());
  EXPECT_EQ(forever.barrier_id(), "sync");
  EXPECT_EQ(forever.barrier_timeout_in_ms(), int64_t{1} << 40);
  EXPECT_EQ(forever.barrier_timeout_in_ms(), kMaxBarrierTimeoutMs);
  EXPECT_EQ(forever.tasks_size(), 0);  // every task of the job
  EXPECT_FALSE(forever.has_source_task());
  EXPECT_EQ(Barrier("sync", absl::Seconds(30)).barrier_timeout_in_ms(), 30'000);
}

TEST(BarrierRequestsTest, BarrierListsItsTasksInOrder) {
  proto::BarrierRequest request =
      Barrier("pair", absl::Seconds(1), {MakeTask("worker", 1), MakeTask("worker", 0)});
  ASSERT_EQ(request.tasks_size(), 2);
  EXPECT_EQ(request.tasks(0).task_id(), 1);
  EXPECT_EQ(request.tasks(1).task_id(), 0);
}

TEST(BarrierRequestsTest, CancelAndProgressNameTheBarrier) {
  EXPECT_EQ(CancelBarrier("sync").barrier_id(), "sync");
  EXPECT_EQ(GetBarrierProgress("sync").barrier_id(), "sync");
}

}  // namespace
}  // namespace muster::requests
