// Barriers of muster._muster.Agent with their progress: wait_at_barrier (optionally reporting
// the open instance every `progress_every` seconds to a Python callable, as the C++
// Agent::WaitAtBarrier overload with BarrierProgressOptions does), get_barrier_progress, and
// the module function barrier_progress_text (muster::BarrierProgressText).
//
// The report is made here rather than through that overload, which blocks its caller: the wait
// stays an asynchronous call (Ctrl-C interrupts the blocking form, the _async form returns a
// Future) and a poller actor asks for the progress next to it, holding the agent only weakly
// so that close() still ends the agent (and with it the wait and the poller).
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <absl/strings/str_cat.h>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "bindings.h"
#include "common.h"
#include "muster/messages/requests/barrier_requests.h"
#include "muster/messages/task_name.h"
#include "muster/messages/vocabulary/atoms.h"
#include "py_agent.h"

namespace muster::python {
namespace {

py::dict BarrierInfoDict(const proto::BarrierInfo& info) {
  py::list waiting_for;
  for (const auto& task : info.waiting_for()) waiting_for.append(TaskString(task));
  py::dict d;
  d["barrier_id"] = info.barrier_id();
  d["counter"] = info.counter();
  d["arrived"] = info.arrived();
  d["total"] = info.total();
  d["waiting_for"] = waiting_for;
  d["waited_ms"] = info.waited_ms();
  d["deadline_in_ms"] = info.deadline_in_ms();
  d["first_task"] = info.has_first_task() ? py::object(py::str(TaskString(info.first_task())))
                                          : py::object(py::none());
  return d;
}

// The BarrierInfo a dict of BarrierInfoDict's form describes (the fields the text uses).
proto::BarrierInfo BarrierInfoOf(const py::dict& d) {
  proto::BarrierInfo info;
  info.set_barrier_id(d["barrier_id"].cast<std::string>());
  info.set_arrived(d["arrived"].cast<int32_t>());
  info.set_total(d["total"].cast<int32_t>());
  info.set_waited_ms(d["waited_ms"].cast<int64_t>());
  for (const auto& name : d["waiting_for"].cast<std::vector<std::string>>()) {
    *info.add_waiting_for() = ValueOrThrow(ParseTaskName(name));
  }
  return info;
}

// One barrier wait's progress report: the poller and the Python callable, until Stop().
struct ProgressReport {
  std::atomic<bool> stopped{false};
  caf::actor poller;  // set before the wait starts, then only read
  PyHandle callback;

  // Ends the report (idempotent, any thread, no GIL): no call of the callback starts after it.
  static void Stop(const std::shared_ptr<ProgressReport>& report) {
    if (report->stopped.exchange(true)) return;
    caf::anon_send_exit(report->poller, caf::exit_reason::user_shutdown);
    Dispatcher::Get().Post([report] { report->callback.Release(); });
  }
};

// Drops a strong reference taken on an actor thread: when it is the last one (close() ran
// meanwhile), ~Agent, which blocks until the agent actor is down, runs on a thread of its own.
void DropOffActorThread(std::shared_ptr<Agent> agent) {
  if (agent.use_count() == 1) {
    std::thread([agent = std::move(agent)]() mutable { agent.reset(); }).detach();
  }
}

// Asks for barrier `id`'s progress every `every` and posts each answer to the report's callable;
// ends on ProgressReport::Stop, or once the agent is gone.
caf::actor SpawnProgressPoller(caf::actor_system& system, std::weak_ptr<Agent> weak, std::string id,
                               caf::timespan every, std::shared_ptr<ProgressReport> report) {
  return system.spawn([=](caf::event_based_actor* self) -> caf::behavior {
    self->delayed_send(self, every, retry_atom::value);
    return {
        [=](retry_atom) {
          std::shared_ptr<Agent> agent = weak.lock();
          if (!agent || report->stopped.load()) {
            self->quit();
            return;
          }
          agent->CallAsync<proto::GetBarrierProgressResponse>(
              [report](absl::StatusOr<proto::GetBarrierProgressResponse> response) {
                if (!response.ok()) return;  // not open (yet, or any more): nothing to report
                Dispatcher::Get().Post([report, info = response->barrier()] {
                  if (!report->stopped.load()) report->callback.get()(BarrierInfoDict(info));
                });
              },
              requests::GetBarrierProgress(id));
          DropOffActorThread(std::move(agent));
          self->delayed_send(self, every, retry_atom::value);
        },
    };
  });
}

caf::timespan ProgressPeriod(double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0) {
    throw py::value_error(absl::StrCat(
        "progress_every must be a number of seconds > 0 (or None: no report); got ", seconds));
  }
  // At least 10 ms, as the C++ poller (barrier_progress_actor.cc).
  return std::max<caf::timespan>(std::chrono::duration_cast<caf::timespan>(
                                     std::chrono::duration<double>(std::min(seconds, 1e9))),
                                 std::chrono::milliseconds(10));
}

}  // namespace

void BindBarrierWait(AgentClass& cls) {
  Both(cls, "wait_at_barrier",
       [](PyAgent& self, bool async, const std::string& id, std::optional<double> timeout,
          const std::vector<std::pair<std::string, int>>& tasks,
          std::optional<double> progress_every, py::object on_progress) {
         std::shared_ptr<Agent> agent = self.Get();
         proto::BarrierRequest request = requests::Barrier(id, ToDuration(timeout), TasksOf(tasks));
         std::function<void()> stop;
         if (progress_every.has_value() && !on_progress.is_none()) {
           caf::timespan every = ProgressPeriod(*progress_every);
           auto report = std::make_shared<ProgressReport>();
           report->callback = PyHandle(on_progress);
           report->poller = SpawnProgressPoller(self.system(), agent, id, every, report);
           stop = [report] { ProgressReport::Stop(report); };
         }
         std::weak_ptr<Agent> weak = agent;
         DropWithoutGil(std::move(agent));  // pending calls never keep the agent alive
         auto on_interrupt = [weak, id, stop] {
           if (stop) stop();
           IfAlive(weak, [&](Agent& agent) { agent.CancelBarrier(id).IgnoreError(); });
         };
         return self.CallThen<proto::BarrierResponse>(async, &None, on_interrupt, stop, request);
       });
  Both(cls, "get_barrier_progress", [](PyAgent& self, bool async, const std::string& id) {
    return self.Call<proto::GetBarrierProgressResponse>(
        async,
        [](const proto::GetBarrierProgressResponse& r) -> py::object {
          return BarrierInfoDict(r.barrier());
        },
        nullptr, requests::GetBarrierProgress(id));
  });
}

void BindBarrierProgressText(py::module_& m) {
  m.def(
      "barrier_progress_text",
      [](const py::dict& info) { return BarrierProgressText(BarrierInfoOf(info)); },
      py::arg("info"),
      "One line for a barrier's progress dict: \"barrier <id>: 1/2 arrived after 12s; "
      "missing worker/[1]\".");
}

}  // namespace muster::python
