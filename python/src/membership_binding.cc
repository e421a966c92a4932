// The elastic-job methods of muster._muster.Agent (docs/agent.md, "Elastic jobs"):
// wait_for_membership and get_membership. muster/_agent_health.py carries their docstrings.
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include <absl/strings/str_cat.h>

#include "common.h"
#include "muster/messages/requests/wire_timeouts.h"
#include "py_agent.h"

namespace muster::python {

py::object MembershipDict(const proto::JobMembership& membership) {
  py::dict d;
  d["job"] = membership.job_name();
  d["version"] = membership.version();
  d["members"] =
      py::cast(std::vector<int32_t>(membership.members().begin(), membership.members().end()));
  d["waiting"] =
      py::cast(std::vector<int32_t>(membership.waiting().begin(), membership.waiting().end()));
  d["min_tasks"] = membership.min_tasks();
  d["max_tasks"] = membership.max_tasks();
  return d;
}

namespace {

// None: no deadline (0 on the wire); otherwise whole milliseconds, from 1 to the longest.
int64_t TimeoutMs(std::optional<double> timeout) {
  if (!timeout.has_value()) return 0;
  if (!std::isfinite(*timeout) || *timeout < 0) {
    throw py::value_error(absl::StrCat(
        "a membership timeout is a number of seconds >= 0 (or None: no deadline); got ", *timeout));
  }
  // Beyond the leader's longest timeout (a year), that one; and at least 1 ms (0 is none).
  if (*timeout * 1000 >= static_cast<double>(kMaxMembershipTimeoutMs)) {
    return kMaxMembershipTimeoutMs;
  }
  return std::max<int64_t>(1, std::llround(*timeout * 1000));
}

}  // namespace

void BindMembership(AgentClass& cls) {
  Both(cls, "wait_for_membership",
       [](PyAgent& self, bool async, int64_t known_version, std::optional<double> timeout) {
         proto::WaitForMembershipRequest request;
         request.set_known_version(known_version);
         request.set_timeout_in_ms(TimeoutMs(timeout));
         return self.Call<proto::WaitForMembershipResponse>(
             async,
             [](const proto::WaitForMembershipResponse& r) {
               return MembershipDict(r.membership());
             },
             nullptr, request);
       });
  Both(cls, "get_membership", [](PyAgent& self, bool async, const std::string& job) {
    proto::GetMembershipRequest request;
    request.set_job_name(job.empty() ? self.Get()->task().job_name() : job);
    return self.Call<proto::GetMembershipResponse>(
        async, [](const proto::GetMembershipResponse& r) { return MembershipDict(r.membership()); },
        nullptr, request);
  });
}

}  // namespace muster::python
