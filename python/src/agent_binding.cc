// muster._muster.Agent: muster::Agent for Python. Every call is made asynchronously on the
// agent actor; the blocking form waits for it with the GIL released (Ctrl-C interrupts the wait),
// the *_async form returns a concurrent.futures.Future. Callbacks (errors, watches, preemption
// notices) and futures run on the dispatcher's Python thread, never on an actor thread.
// muster/_agent.py wraps this class with Pythonic arguments and the docstrings. This file has the
// lifecycle and key-value calls; agent_health_binding.cc and barrier_progress_binding.cc the
// job-health calls and barriers.
#include <pybind11/stl.h>

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <absl/strings/str_cat.h>
#include <absl/strings/strip.h>
#include <caf/atom.hpp>

#include "bindings.h"
#include "common.h"
#include "muster/messages/requests/barrier_requests.h"
#include "muster/messages/requests/kv_requests.h"
#include "muster/messages/requests/task_requests.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/agent.h"
#include "py_agent.h"
#include "runtime.h"

namespace muster::python {
namespace {

// What the agent does when it goes to ERROR: end the process (exit_code != 0: a job whose
// peers failed must not hang), and/or call a Python callable with the exception.
struct ErrorSink {
  int exit_code = 0;
  std::string exit_prefix;
  PyHandle callback;
  proto::CoordinatedTask task;  // the agent's own
};

void OnAgentError(const std::shared_ptr<ErrorSink>& sink, const absl::Status& status) {
  if (sink->exit_code != 0) {
    std::string who;
    const std::optional<proto::CoordinationServiceError> payload = GetCoordinationError(status);
    if (payload && payload->has_source_task()) {
      who = absl::StrCat(" ", TaskString(payload->source_task()), " (rank ",
                         payload->source_task().task_id(), ") failed:");
    }
    std::string line =
        absl::StrCat(sink->exit_prefix, ":", who, " ", absl::StatusCodeToString(status.code()),
                     ": ", absl::StripSuffix(status.message(), "."),
                     "; ending this process (exit code ", sink->exit_code, ")\n");
    // No GIL, no Python: the main thread may be blocked inside a collective.
    ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
    (void)ignored;
    // This agent's own failure, which it reports (report_error): the report gets the same
    // moment to leave, or the others would learn of a lost connection instead of what it said.
    const bool own =
        payload && payload->has_source_task() && SameTask(payload->source_task(), sink->task);
    if (Runtime::Get().HostsLeader() || own) {
      // The leader in this process has just pushed the same failure to the other ranks: its
      // network thread gets a moment to send it before the process, and the leader, end (they
      // would learn of a lost leader instead of the rank that failed).
      const int code = sink->exit_code;
      std::thread([code] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        std::_Exit(code);
      }).detach();
      return;
    }
    std::_Exit(sink->exit_code);
  }
  if (sink->callback) {
    Dispatcher::Get().Post([sink, status] { sink->callback.get()(MakeException(status)); });
  }
}

py::dict TaskStateDict(const proto::CoordinatedTaskStateInfo& info) {
  py::dict d;
  d["task"] = TaskString(info.task());
  d["state"] = proto::CoordinatedTaskState_Name(info.state());
  d["error_code"] = info.error_code();
  d["error_message"] = info.error_message();
  d["incarnation"] = info.incarnation();
  d["last_heartbeat_age_ms"] = info.last_heartbeat_age_ms();
  d["connected_age_ms"] = info.connected_age_ms();
  d["step"] = info.has_step() ? py::object(py::int_(info.step())) : py::object(py::none());
  d["step_age_ms"] = info.step_age_ms();
  return d;
}

std::unique_ptr<PyAgent> MakeAgent(
    const std::string& leader, const std::string& job, int task,
    std::optional<double> heartbeat_timeout, std::optional<double> register_timeout,
    std::optional<double> rpc_timeout, std::optional<double> shutdown_barrier_timeout,
    bool recoverable, uint64_t incarnation, const std::string& token, bool shutdown_on_destruction,
    py::object on_error, int exit_code_on_error, const std::string& exit_prefix,
    py::object on_preemption, std::optional<double> leader_reconnect_timeout, bool wait_for_leader,
    bool claim, py::object on_membership, bool direct_calls) {
  AgentOptions options;
  options.direct_calls = direct_calls;
  options.leader = leader;
  options.job_name = job;
  options.task_id = task;
  options.recoverable = recoverable;
  options.incarnation = incarnation;
  options.claim = claim;
  options.token = token;
  options.shutdown_on_destruction = shutdown_on_destruction;
  // None: the leader's (it sends it when the agent connects).
  if (heartbeat_timeout && *heartbeat_timeout <= 0) {
    throw py::value_error("heartbeat_timeout must be > 0 seconds (None: the leader's)");
  }
  if (heartbeat_timeout) options.heartbeat_timeout = absl::Seconds(*heartbeat_timeout);
  if (register_timeout) options.register_timeout = ToDuration(register_timeout);
  if (rpc_timeout) options.rpc_timeout = ToDuration(rpc_timeout);
  if (shutdown_barrier_timeout) {
    options.shutdown_barrier_timeout = ToDuration(shutdown_barrier_timeout);
  }
  options.leader_reconnect_timeout = ToDuration(leader_reconnect_timeout);
  options.wait_for_leader = wait_for_leader;
  auto sink = std::make_shared<ErrorSink>();
  sink->exit_code = exit_code_on_error;
  sink->exit_prefix = exit_prefix;
  sink->task = MakeTask(job, task);
  if (!on_error.is_none()) sink->callback = PyHandle(on_error);
  auto preemption = std::make_shared<PreemptionSink>();
  if (!on_preemption.is_none()) preemption->callback = PyHandle(on_preemption);
  options.on_preemption = [preemption](const proto::PreemptionNotice& notice) {
    OnPreemptionNotice(preemption, notice);
  };
  if (!on_membership.is_none()) {
    // Called on the agent's callback runner (no GIL): the call itself on the dispatcher.
    options.on_membership = [callback = PyHandle(on_membership)](const proto::JobMembership& m) {
      Dispatcher::Get().Post([callback, m] { callback.get()(MembershipDict(m)); });
    };
  }
  caf::actor_system* system = ValueOrThrow(Runtime::Get().WorkerSystem(options.heartbeat_timeout));
  absl::StatusOr<std::unique_ptr<Agent>> agent;
  {
    py::gil_scoped_release release;
    agent = Agent::Create(*system, options,
                          [sink](const absl::Status& status) { OnAgentError(sink, status); });
  }
  return std::make_unique<PyAgent>(std::shared_ptr<Agent>(ValueOrThrow(std::move(agent))), system,
                                   std::move(preemption));
}

}  // namespace

void BindAgent(py::module_& m) {
  AgentClass cls(m, "Agent");
  cls.def(py::init(&MakeAgent), py::arg("leader"), py::arg("job"), py::arg("task"),
          py::arg("heartbeat_timeout"), py::arg("register_timeout"), py::arg("rpc_timeout"),
          py::arg("shutdown_barrier_timeout"), py::arg("recoverable"), py::arg("incarnation"),
          py::arg("token"), py::arg("shutdown_on_destruction"), py::arg("on_error"),
          py::arg("exit_code_on_error"), py::arg("exit_prefix"), py::arg("on_preemption"),
          py::arg("leader_reconnect_timeout"), py::arg("wait_for_leader"), py::arg("claim"),
          py::arg("on_membership"), py::arg("direct_calls") = true);
  cls.def("close", &PyAgent::Close, py::call_guard<py::gil_scoped_release>());
  cls.def("state", [](PyAgent& self) {
    auto agent = self.Get();
    AgentState state;
    {
      py::gil_scoped_release release;
      state = agent->state();
    }
    return std::string(AgentStateName(state));
  });
  cls.def("error", [](PyAgent& self) -> py::object {
    auto agent = self.Get();
    absl::Status error;
    {
      py::gil_scoped_release release;
      error = agent->error();
    }
    return error.ok() ? py::none() : MakeException(error);
  });
  cls.def("reconnecting", [](PyAgent& self) {
    auto agent = self.Get();
    py::gil_scoped_release release;
    return agent->Status().reconnecting;
  });
  cls.def("dropped_watches", [](PyAgent& self) {
    auto agent = self.Get();
    std::vector<std::string> keys;
    {
      py::gil_scoped_release release;
      keys = agent->Status().dropped_watches;
    }
    return keys;
  });
  cls.def("incarnation", [](PyAgent& self) { return self.Get()->incarnation(); });
  cls.def("direct_calls_answered",
          [](PyAgent& self) { return self.Get()->direct_calls_answered(); });
  cls.def("task", [](PyAgent& self) { return TaskString(self.Get()->task()); });

  Both(cls, "connect", [](PyAgent& self, bool async) {
    return self.Call<proto::RegisterTaskResponse>(async, &None, nullptr, caf::connect_atom::value);
  });
  Both(cls, "wait_for_all_tasks", [](PyAgent& self, bool async, const py::bytes& devices) {
    proto::CoordinationServiceDeviceInfo local_devices;
    if (!local_devices.ParseFromString(std::string(devices))) {
      throw py::value_error("local_devices is not a serialized CoordinationServiceDeviceInfo");
    }
    return self.Call<proto::WaitForAllTasksResponse>(
        async,
        [](const proto::WaitForAllTasksResponse& r) -> py::object {
          return py::bytes(r.cluster_device_info().SerializeAsString());
        },
        nullptr, requests::WaitForAllTasks(local_devices));
  });
  Both(cls, "get_task_state",
       [](PyAgent& self, bool async, const std::vector<std::pair<std::string, int>>& tasks) {
         return self.Call<proto::GetTaskStateResponse>(
             async,
             [](const proto::GetTaskStateResponse& r) -> py::object {
               py::list states;
               for (const auto& info : r.task_state()) states.append(TaskStateDict(info));
               return states;
             },
             nullptr, requests::GetTaskState(TasksOf(tasks)));
       });
  Both(cls, "report_error", [](PyAgent& self, bool async, int code, const std::string& message) {
    return self.Call<proto::ReportErrorToServiceResponse>(
        async, &None, nullptr, requests::ReportErrorToService(code, message));
  });
  Both(cls, "reset", [](PyAgent& self, bool async) {
    return self.Call<proto::ResetTaskResponse>(async, &None, nullptr, proto::ResetTaskRequest{});
  });
  Both(cls, "shutdown", [](PyAgent& self, bool async) {
    return self.Call<proto::ShutdownTaskResponse>(async, &None, nullptr,
                                                  proto::ShutdownTaskRequest{});
  });

  Both(cls, "get_key_value",
       [](PyAgent& self, bool async, const std::string& key, std::optional<double> timeout) {
         proto::GetKeyValueRequest request = requests::GetKeyValue(key, WaitTimeout(timeout));
         std::weak_ptr<Agent> weak = self.GetWeak();
         return self.CallKv(
             async,
             [](const proto::GetKeyValueResponse& r) -> py::object {
               return py::bytes(r.kv().value());
             },
             [weak, key] { IfAlive(weak, [&](Agent& agent) { agent.CancelGetKeyValue(key); }); },
             request, key);
       });
  Both(cls, "try_get_key_value", [](PyAgent& self, bool async, const std::string& key) {
    return self.CallKv(
        async,
        [](const proto::TryGetKeyValueResponse& r) -> py::object {
          return py::bytes(r.kv().value());
        },
        nullptr, requests::TryGetKeyValue(key));
  });
  Both(cls, "get_key_value_dir", [](PyAgent& self, bool async, const std::string& directory) {
    return self.CallKv(
        async,
        [](const proto::GetKeyValueDirResponse& r) -> py::object { return EntryList(r.kv()); },
        nullptr, requests::GetKeyValueDir(directory));
  });
  Both(cls, "insert_key_value",
       [](PyAgent& self, bool async, const std::string& key, const py::bytes& value,
          bool allow_overwrite, bool ephemeral) {
         return self.CallKv(
             async, &None, nullptr,
             requests::InsertKeyValue(key, std::string(value), allow_overwrite, ephemeral));
       });
  Both(cls, "update_key_value",
       [](PyAgent& self, bool async, const std::string& key, const py::bytes& value,
          bool ephemeral) {
         return self.Call<proto::UpdateKeyValueResponse>(
             async, &None, nullptr, requests::UpdateKeyValue(key, std::string(value), ephemeral));
       });
  Both(cls, "delete_key_value", [](PyAgent& self, bool async, const std::string& key) {
    return self.CallKv(async, &None, nullptr, requests::DeleteKeyValue(key, /*recursive=*/true));
  });
  Both(cls, "increment_key_value",
       [](PyAgent& self, bool async, const std::string& key, int64_t delta) {
         return self.CallKv(
             async,
             [](const proto::IncrementKeyValueResponse& r) -> py::object {
               return py::int_(ValueOrThrow(CounterOf(r)));
             },
             nullptr, requests::IncrementKeyValue(key, delta));
       });
  Both(cls, "compare_and_swap",
       [](PyAgent& self, bool async, const std::string& key, std::optional<py::bytes> expected,
          const py::bytes& desired, bool ephemeral) {
         std::optional<std::string> expected_value;
         if (expected) expected_value = std::string(*expected);
         return self.CallKv(
             async,
             [](const proto::CompareAndSwapResponse& r) -> py::object {
               py::object current = py::none();
               if (r.exists()) current = py::bytes(r.current());
               return py::make_tuple(r.succeeded(), current);
             },
             nullptr,
             requests::CompareAndSwap(key, expected_value, std::string(desired), ephemeral));
       });
  cls.def("start_watch_key", [](PyAgent& self, const std::string& key, py::object callback) {
    PyHandle handle(std::move(callback));
    auto on_change = [handle](const proto::KeyValueChangeEvent& event) {
      Dispatcher::Get().Post([handle, event] {
        py::object value = event.kind() == proto::KeyValueChangeEvent::DELETED
                               ? py::object(py::none())
                               : py::object(py::bytes(event.value()));
        handle.get()(proto::KeyValueChangeEvent::Kind_Name(event.kind()), event.key(), value,
                     event.revision());
      });
    };
    std::shared_ptr<Agent> agent = self.Get();
    absl::Status status;
    {
      py::gil_scoped_release release;
      status = agent->StartWatchKeyEvents(key, on_change);
    }
    ThrowIfError(status);
  });
  cls.def("stop_watch_key", [](PyAgent& self, const std::string& key) {
    std::shared_ptr<Agent> agent = self.Get();
    absl::Status status;
    {
      py::gil_scoped_release release;
      status = agent->StopWatchKey(key);
    }
    ThrowIfError(status);
  });

  BindBarrierWait(cls);
  Both(cls, "cancel_barrier", [](PyAgent& self, bool async, const std::string& id) {
    return self.Call<proto::CancelBarrierResponse>(async, &None, nullptr,
                                                   requests::CancelBarrier(id));
  });
  Both(cls, "get_alive_tasks",
       [](PyAgent& self, bool async, const std::vector<std::pair<std::string, int>>& tasks) {
         return self.Call<proto::GetAliveTasksResponse>(
             async,
             [](const proto::GetAliveTasksResponse& r) -> py::object {
               py::list alive;
               for (int i = 0; i < r.alive_tasks_size(); ++i) {
                 uint64_t incarnation = i < r.incarnations_size() ? r.incarnations(i) : 0;
                 alive.append(py::make_tuple(TaskString(r.alive_tasks(i)), incarnation));
               }
               return alive;
             },
             nullptr, requests::GetAliveTasks(TasksOf(tasks)));
       });
  Both(cls, "watch_job_state",
       [](PyAgent& self, bool async, const std::string& job, std::optional<int64_t> version) {
         return self.Call<proto::WatchJobStateResponse>(
             async,
             [](const proto::WatchJobStateResponse& r) -> py::object {
               py::list states;
               for (const auto& info : r.task_state()) states.append(TaskStateDict(info));
               return py::make_tuple(r.version_number(), states);
             },
             nullptr, requests::WatchJobState(job, version));
       });
  BindAgentHealth(cls);
  BindMembership(cls);
}

}  // namespace muster::python
