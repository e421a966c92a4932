#include "muster/messages/requests/wire_timeouts.h"

#include <algorithm>

namespace muster {

int64_t WaitTimeoutMs(absl::Duration timeout) {
  return timeout == absl::InfiniteDuration() ? 0 : absl::ToInt64Milliseconds(timeout);
}

absl::Duration AtLeastOneMillisecond(absl::Duration timeout) {
  return std::max(timeout, absl::Milliseconds(1));
}

int64_t MembershipTimeoutMs(absl::Duration timeout) {
  if (timeout == absl::InfiniteDuration()) return 0;
  return std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout), 1, kMaxMembershipTimeoutMs);
}

int64_t BarrierTimeoutMs(absl::Duration timeout) {
  return timeout == absl::InfiniteDuration() ? kMaxBarrierTimeoutMs
                                             : absl::ToInt64Milliseconds(timeout);
}

int64_t DeadlineUnixMs(absl::Time deadline) {
  return deadline == absl::InfiniteFuture() ? 0
                                            : std::max<int64_t>(0, absl::ToUnixMillis(deadline));
}

}  // namespace muster
