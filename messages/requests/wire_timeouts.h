// How "no timeout" and "no deadline" go on the wire. Above the wire there is one way to say
// them: absl::InfiniteDuration() for a timeout, absl::InfiniteFuture() for a deadline. The
// request builders (kv_requests.h, barrier_requests.h, task_requests.h) are the only callers:
// each proto field kind has its own encoding, and only this file knows it.
#pragma once

#include <cstdint>

#include <absl/time/time.h>

namespace muster {

// The longest barrier timeout the service takes: about 34 years, what a barrier without a
// deadline sends.
inline constexpr int64_t kMaxBarrierTimeoutMs = int64_t{1} << 40;

// The longest WaitForMembership timeout the service takes (a year); 0 is none.
inline constexpr int64_t kMaxMembershipTimeoutMs = int64_t{365} * 24 * 3600 * 1000;

// A blocking read's timeout_in_ms (GetKeyValueRequest, WaitForKeysRequest): 0 waits without a
// deadline; a finite timeout is its whole milliseconds, truncated.
int64_t WaitTimeoutMs(absl::Duration timeout);
// `timeout`, but at least 1 ms: a finite wait that WaitTimeoutMs never sends as 0 (none).
absl::Duration AtLeastOneMillisecond(absl::Duration timeout);

// WaitForMembershipRequest.timeout_in_ms: 0 without a deadline; a finite timeout is its whole
// milliseconds, at least 1 (0 would be none) and at most kMaxMembershipTimeoutMs.
int64_t MembershipTimeoutMs(absl::Duration timeout);

// BarrierRequest.barrier_timeout_in_ms: kMaxBarrierTimeoutMs without a deadline (the field has
// no "none": 0 is a deadline that has passed); a finite timeout is its whole milliseconds.
int64_t BarrierTimeoutMs(absl::Duration timeout);

// A deadline as Unix milliseconds where 0 means unknown (NotifyPreemptionRequest): 0 for
// absl::InfiniteFuture(), else the deadline's milliseconds, at least 0.
int64_t DeadlineUnixMs(absl::Time deadline);

}  // namespace muster
