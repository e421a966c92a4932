// The Agent's calls of elastic jobs (docs/agent.md, "Elastic jobs").
#include <algorithm>

#include <absl/time/time.h>

#include "muster/messages/requests/wire_timeouts.h"
#include "muster/net/agent/agent.h"

namespace muster {

absl::StatusOr<proto::JobMembership> Agent::WaitForMembership(int64_t known_version,
                                                              absl::Duration timeout) {
  proto::WaitForMembershipRequest request;
  request.set_known_version(known_version);
  if (timeout != absl::InfiniteDuration()) {
    // 0 asks the leader for no deadline: a zero or negative timeout is the shortest one, and
    // one beyond the leader's longest is that.
    request.set_timeout_in_ms(
        std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout), 1, kMaxMembershipTimeoutMs));
  }
  auto response = Ask<proto::WaitForMembershipResponse>(std::move(request));
  if (!response.ok()) return response.status();
  return std::move(*response->mutable_membership());
}

absl::StatusOr<proto::JobMembership> Agent::GetMembership(const std::string& job) {
  proto::GetMembershipRequest request;
  request.set_job_name(job.empty() ? task().job_name() : job);
  auto response = Ask<proto::GetMembershipResponse>(std::move(request));
  if (!response.ok()) return response.status();
  return std::move(*response->mutable_membership());
}

}  // namespace muster
