// The elastic-job methods of muster._muster.Agent (docs/agent.md, "Elastic jobs"):
// wait_for_membership and get_membership. muster/_agent_health.py carries their docstrings.
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "muster/messages/requests/task_requests.h"
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

void BindMembership(AgentClass& cls) {
  Both(cls, "wait_for_membership",
       [](PyAgent& self, bool async, int64_t known_version, std::optional<double> timeout) {
         return self.Call<proto::WaitForMembershipResponse>(
             async,
             [](const proto::WaitForMembershipResponse& r) {
               return MembershipDict(r.membership());
             },
             nullptr, requests::WaitForMembership(known_version, ToDuration(timeout)));
       });
  Both(cls, "get_membership", [](PyAgent& self, bool async, const std::string& job) {
    return self.Call<proto::GetMembershipResponse>(
        async, [](const proto::GetMembershipResponse& r) { return MembershipDict(r.membership()); },
        nullptr, requests::GetMembership(job.empty() ? self.Get()->task().job_name() : job));
  });
}

}  // namespace muster::python
