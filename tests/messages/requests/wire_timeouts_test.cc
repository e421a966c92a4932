#include "muster/messages/requests/wire_timeouts.h"

#include <limits>

#include <gtest/gtest.h>

namespace muster {
namespace {

TEST(WireTimeoutsTest, AWaitWithoutTimeoutIsZero) {
  EXPECT_EQ(WaitTimeoutMs(absl::InfiniteDuration()), 0);
  EXPECT_EQ(WaitTimeoutMs(absl::Seconds(5)), 5000);
  // Whole milliseconds, truncated.
  EXPECT_EQ(WaitTimeoutMs(absl::Microseconds(2500)), 2);
}

TEST(WireTimeoutsTest, AtLeastOneMillisecondKeepsNoTimeout) {
  EXPECT_EQ(AtLeastOneMillisecond(absl::InfiniteDuration()), absl::InfiniteDuration());
  EXPECT_EQ(AtLeastOneMillisecond(absl::ZeroDuration()), absl::Milliseconds(1));
  EXPECT_EQ(AtLeastOneMillisecond(absl::Microseconds(10)), absl::Milliseconds(1));
  EXPECT_EQ(AtLeastOneMillisecond(absl::Seconds(-3)), absl::Milliseconds(1));
  EXPECT_EQ(AtLeastOneMillisecond(absl::Seconds(2)), absl::Seconds(2));
  EXPECT_EQ(WaitTimeoutMs(AtLeastOneMillisecond(absl::ZeroDuration())), 1);
}

TEST(WireTimeoutsTest, AMembershipTimeoutIsNoneOrFromOneMillisecondToAYear) {
  EXPECT_EQ(MembershipTimeoutMs(absl::InfiniteDuration()), 0);
  EXPECT_EQ(MembershipTimeoutMs(absl::ZeroDuration()), 1);
  EXPECT_EQ(MembershipTimeoutMs(absl::Microseconds(300)), 1);
  EXPECT_EQ(MembershipTimeoutMs(absl::Seconds(2)), 2000);
  EXPECT_EQ(MembershipTimeoutMs(absl::Hours(24 * 365 * 10)), kMaxMembershipTimeoutMs);
}

TEST(WireTimeoutsTest, ABarrierWithoutTimeoutIsTheLongestTimeout) {
  EXPECT_EQ(kMaxBarrierTimeoutMs, int64_t{1} << 40);
  EXPECT_EQ(BarrierTimeoutMs(absl::InfiniteDuration()), kMaxBarrierTimeoutMs);
  EXPECT_EQ(BarrierTimeoutMs(absl::Seconds(60)), 60'000);
  // 0 is a deadline that has passed, not "none".
  EXPECT_EQ(BarrierTimeoutMs(absl::ZeroDuration()), 0);
}

TEST(WireTimeoutsTest, AnUnknownDeadlineIsZero) {
  EXPECT_EQ(DeadlineUnixMs(absl::InfiniteFuture()), 0);
  EXPECT_EQ(DeadlineUnixMs(absl::FromUnixMillis(1'700'000'000'123)), 1'700'000'000'123);
  EXPECT_EQ(DeadlineUnixMs(absl::FromUnixMillis(-5)), 0);
}

}  // namespace
}  // namespace muster
