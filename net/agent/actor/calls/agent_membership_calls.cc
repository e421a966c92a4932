// The Agent's calls of elastic jobs (docs/agent.md, "Elastic jobs").
#include <utility>

#include <absl/time/time.h>

#include "muster/messages/requests/task_requests.h"
#include "muster/net/agent/agent.h"

namespace muster {

absl::StatusOr<proto::JobMembership> Agent::WaitForMembership(int64_t known_version,
                                                              absl::Duration timeout) {
  auto response =
      Ask<proto::WaitForMembershipResponse>(requests::WaitForMembership(known_version, timeout));
  if (!response.ok()) return response.status();
  return std::move(*response->mutable_membership());
}

absl::StatusOr<proto::JobMembership> Agent::GetMembership(const std::string& job) {
  auto response = Ask<proto::GetMembershipResponse>(
      requests::GetMembership(job.empty() ? task().job_name() : job));
  if (!response.ok()) return response.status();
  return std::move(*response->mutable_membership());
}

}  // namespace muster
