// The job-health methods of muster._muster.Agent (docs/agent.md, "Progress and preemption"):
// report_progress, notify_preemption, reached_sync_point, and the key-value reductions
// reduce_key_value_dir and wait_for_keys. muster/_agent.py carries their docstrings.
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <absl/strings/ascii.h>
#include <absl/strings/str_cat.h>

#include "common.h"
#include "muster/messages/requests/kv_requests.h"
#include "muster/messages/requests/task_requests.h"
#include "muster/messages/vocabulary/atoms.h"
#include "py_agent.h"

namespace muster::python {
namespace {

proto::ReduceOp ReduceOpOf(const std::string& op) {
  const std::string name = absl::AsciiStrToLower(op);
  if (name == "max") return proto::REDUCE_MAX;
  if (name == "min") return proto::REDUCE_MIN;
  if (name == "sum") return proto::REDUCE_SUM;
  throw StatusError(absl::InvalidArgumentError(
      absl::StrCat("unknown reduce op \"", op, "\"; expected \"max\", \"min\" or \"sum\"")));
}

// None: unknown. A deadline given is rounded to the millisecond and at least 1 ms after the
// epoch (the epoch itself would be sent as "unknown").
absl::Time PreemptionDeadline(std::optional<double> deadline) {
  if (!deadline.has_value()) return absl::InfiniteFuture();
  if (!std::isfinite(*deadline) || *deadline < 0) {
    throw py::value_error(absl::StrCat(
        "a preemption deadline is a Unix time in seconds >= 0 (or None: unknown); got ",
        *deadline));
  }
  return absl::FromUnixMillis(std::max<int64_t>(1, std::llround(*deadline * 1000)));
}

}  // namespace

void OnPreemptionNotice(const std::shared_ptr<PreemptionSink>& sink,
                        const proto::PreemptionNotice& notice) {
  sink->noticed.store(true);
  if (!sink->callback) return;
  Dispatcher::Get().Post([sink, notice] {
    py::object deadline = py::none();
    if (notice.deadline_unix_ms() > 0) deadline = py::float_(notice.deadline_unix_ms() / 1000.0);
    sink->callback.get()(TaskString(notice.notified_by()), deadline, notice.reason());
  });
}

void BindAgentHealth(AgentClass& cls) {
  // An atomic store: no message, no GIL release needed.
  cls.def("report_progress", [](PyAgent& self, int64_t step) { self.Get()->ReportProgress(step); });
  Both(cls, "notify_preemption",
       [](PyAgent& self, bool async, const std::string& reason, std::optional<double> deadline) {
         return self.Call<proto::NotifyPreemptionResponse>(
             async,
             [](const proto::NotifyPreemptionResponse& r) -> py::object {
               return py::bool_(r.first());
             },
             nullptr, requests::NotifyPreemption(reason, PreemptionDeadline(deadline)));
       });
  cls.def("reached_sync_point", [](PyAgent& self, int64_t step) -> bool {
    std::shared_ptr<Agent> agent = self.Get();
    if (!self.preemption_noticed()) {
      // Before a notice, Agent::ReachedSyncPoint only stores the step and returns false; a
      // notice arriving meanwhile makes it wait (briefly) for the sync step, without the GIL.
      absl::StatusOr<bool> reached;
      {
        py::gil_scoped_release release;
        reached = agent->ReachedSyncPoint(step);
      }
      return ValueOrThrow(std::move(reached));
    }
    // After the notice the answer may wait for the leader's sync step: ask the agent actor
    // (what Agent::ReachedSyncPoint does then) and wait interruptibly, as every blocking call.
    agent.reset();
    return self
        .Call<bool>(
            false, [](bool reached) -> py::object { return py::bool_(reached); }, nullptr,
            sync_point_atom::value, step)
        .cast<bool>();
  });

  Both(cls, "reduce_key_value_dir",
       [](PyAgent& self, bool async, const std::string& directory, const std::string& op) {
         return self.Call<proto::ReduceKeyValueDirResponse>(
             async,
             [](const proto::ReduceKeyValueDirResponse& r) -> py::object {
               return py::int_(r.value());
             },
             nullptr, requests::ReduceKeyValueDir(directory, ReduceOpOf(op)));
       });
  Both(cls, "wait_for_keys",
       [](PyAgent& self, bool async, const std::string& directory, int64_t count,
          std::optional<double> timeout) {
         return self.Call<proto::WaitForKeysResponse>(
             async,
             [](const proto::WaitForKeysResponse& r) -> py::object { return EntryList(r.kv()); },
             nullptr, requests::WaitForKeys(directory, count, WaitTimeout(timeout)));
       });
}

}  // namespace muster::python
