// PyAgent, the C++ object behind muster._muster.Agent, and what the files binding its methods
// share (agent_binding.cc: lifecycle, key-value, barriers; agent_health_binding.cc: progress,
// preemption, barrier progress, reductions).
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <absl/base/thread_annotations.h>
#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/synchronization/mutex.h>
#include <absl/time/time.h>
#include <caf/actor_system.hpp>

#include "common.h"
#include "muster/messages/requests/wire_timeouts.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/agent.h"
#include "runtime.h"

namespace muster::python {

// What AgentOptions::on_preemption does: remember that a notice arrived (ReachedSyncPoint then
// waits interruptibly), and call a Python callable with it on the dispatcher thread.
struct PreemptionSink {
  std::atomic<bool> noticed{false};
  PyHandle callback;  // called as callback(notified_by, deadline_unix_seconds or None, reason)
};

// Called on the agent's callback runner (an actor thread): no GIL, no Python.
void OnPreemptionNotice(const std::shared_ptr<PreemptionSink>& sink,
                        const proto::PreemptionNotice& notice);

class PyAgent : public Closable {
 public:
  PyAgent(std::shared_ptr<Agent> agent, caf::actor_system* system,
          std::shared_ptr<PreemptionSink> preemption)
      : system_(system), preemption_(std::move(preemption)), agent_(std::move(agent)) {
    Runtime::Get().Register(this);
  }
  ~PyAgent() override {
    Runtime::Get().Unregister(this);
    if (PyGILState_Check()) {
      py::gil_scoped_release release;
      Close();
    } else {
      Close();
    }
  }

  void Close() override {
    absl::MutexLock closing(&closing_);  // a second close() returns once the agent has ended
    std::shared_ptr<Agent> agent;
    {
      absl::MutexLock lock(&mutex_);
      agent = std::move(agent_);
    }
    // A direct call waiting in another thread holds the agent: it ends first (Cancelled).
    if (agent) agent->StopDirectCalls();
    agent.reset();  // ~Agent: leaves the job (or drops the connection) and waits for the actor
  }

  std::shared_ptr<Agent> Get() {
    absl::MutexLock lock(&mutex_);
    return Open();
  }
  // The agent for a call that may outlive it: a waiting call must not keep the agent alive, or
  // close() from another thread would neither end the agent nor the call.
  std::weak_ptr<Agent> GetWeak() {
    absl::MutexLock lock(&mutex_);
    return Open();
  }
  static absl::Status ClosedError() {
    return absl::FailedPreconditionError(
        "this muster.Agent is closed (close() was called, or the interpreter is exiting)");
  }

  // The actor system the agent runs in (valid while Get() succeeds).
  caf::actor_system& system() const { return *system_; }
  // True once the leader's preemption notice reached this agent.
  bool preemption_noticed() const { return preemption_->noticed.load(); }

  // Makes one call: blocking (waits, interruptible) or asynchronous (a Future). `on_done`, when
  // set, runs first when the call completes (on an actor thread: no GIL, no Python).
  template <class Response, class Convert, class... Request>
  py::object CallThen(bool async, Convert convert, std::function<void()> on_interrupt,
                      std::function<void()> on_done, Request... request) {
    return CallSent<Response>(async, convert, std::move(on_interrupt), std::move(on_done), nullptr,
                              request...);
  }
  // CallThen, with `sent` run on the calling thread once the request is on its way to the
  // agent actor (not when the agent is gone).
  template <class Response, class Convert, class... Request>
  py::object CallSent(bool async, Convert convert, std::function<void()> on_interrupt,
                      std::function<void()> on_done,
                      std::function<void(Agent&, const caf::actor_addr&)> sent,
                      Request... request) {
    // The call holds the agent only while it starts, without the GIL (WaitFor, StartFuture):
    // when close() ran meanwhile, the last reference, whose ~Agent blocks, is dropped here.
    std::weak_ptr<Agent> weak = GetWeak();
    auto start = [weak, on_done, sent,
                  request...](std::function<void(absl::StatusOr<Response>)> done) {
      std::shared_ptr<Agent> agent = weak.lock();
      if (!agent) {
        if (on_done) on_done();
        done(ClosedError());
        return;
      }
      caf::actor_addr call = agent->CallAsync<Response>(
          [on_done, done = std::move(done)](absl::StatusOr<Response> result) {
            if (on_done) on_done();
            done(std::move(result));
          },
          request...);
      if (sent) sent(*agent, call);
    };
    if (async) return StartFuture<Response>(start, convert);
    return convert(ValueOrThrow(WaitFor<Response>(start, on_interrupt)));
  }
  template <class Response, class Convert, class... Request>
  py::object Call(bool async, Convert convert, std::function<void()> on_interrupt,
                  Request... request) {
    return CallThen<Response>(async, convert, std::move(on_interrupt), nullptr, request...);
  }
  // A key-value call: a blocking one is made on this thread when it can go direct
  // (Agent::TryDirect; Ctrl-C ends it within 50 ms), else as Call makes it. `get_key`: a
  // blocking get's key.
  template <class Convert, class Request>
  py::object CallKv(bool async, Convert convert, std::function<void()> on_interrupt,
                    Request request, const std::string& get_key = {}) {
    using Response = KvCallResponse<Request>;
    if (!async) {
      std::optional<absl::StatusOr<Response>> direct;
      std::shared_ptr<Agent> agent = Get();
      // Python runs signal handlers on its main thread only: other threads need no check.
      std::function<bool()> interrupted;
      if (OnMainThread()) {
        interrupted = [] {
          py::gil_scoped_acquire gil;
          return PyErr_CheckSignals() != 0;  // the exception stays set for the raise below
        };
      }
      uint64_t hold = 0;                   // a get's, until the actor has it (Agent::TryDirect)
      std::function<void()> end_of_write;  // a write's, once the actor answered it
      {
        py::gil_scoped_release release;
        direct = agent->TryDirect(request, get_key, interrupted, &hold);
        if (!direct) end_of_write = agent->EndOfDirectWrite(request);
        agent.reset();  // without the GIL: it may be the last reference (close() ran)
      }
      if (PyErr_Occurred() != nullptr) {
        if (end_of_write) end_of_write();  // interrupted: never handed to the actor
        throw py::error_already_set();
      }
      if (direct) return convert(ValueOrThrow(*std::move(direct)));
      if (hold != 0) {
        return CallSent<Response>(
            async, convert, std::move(on_interrupt), nullptr,
            [hold](Agent& agent, const caf::actor_addr& call) { agent.ReleaseGet(hold, call); },
            std::move(request));
      }
      if (end_of_write) {
        return CallThen<Response>(async, convert, std::move(on_interrupt), std::move(end_of_write),
                                  std::move(request));
      }
    }
    return Call<Response>(async, convert, std::move(on_interrupt), std::move(request));
  }

 private:
  const std::shared_ptr<Agent>& Open() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (!agent_) throw StatusError(ClosedError());
    return agent_;
  }

  caf::actor_system* const system_;
  const std::shared_ptr<PreemptionSink> preemption_;
  absl::Mutex closing_ ABSL_ACQUIRED_BEFORE(mutex_);
  absl::Mutex mutex_;
  std::shared_ptr<Agent> agent_ ABSL_GUARDED_BY(mutex_);
};

using AgentClass = py::class_<PyAgent>;

// Drops a reference to an agent on a thread that holds the GIL: when close() ran meanwhile it is
// the last one, and ~Agent, which blocks, must not hold up every other Python thread.
inline void DropWithoutGil(std::shared_ptr<Agent> agent) {
  py::gil_scoped_release release;
  agent.reset();
}

// Calls `fn(agent)` if the agent is still alive, without the GIL: the reference taken for the
// call may be the last one (close() ran meanwhile).
template <class Fn>
void IfAlive(const std::weak_ptr<Agent>& weak, Fn fn) {
  py::gil_scoped_release release;
  if (std::shared_ptr<Agent> agent = weak.lock()) fn(*agent);
}

inline py::object None(const google::protobuf::Message&) { return py::none(); }

inline proto::CoordinatedTask TaskOf(const std::pair<std::string, int>& task) {
  return MakeTask(task.first, task.second);
}

inline std::vector<proto::CoordinatedTask> TasksOf(
    const std::vector<std::pair<std::string, int>>& tasks) {
  std::vector<proto::CoordinatedTask> result;
  for (const auto& task : tasks) result.push_back(TaskOf(task));
  return result;
}

// A blocking read's timeout (get_key_value, wait_for_keys): None waits without a deadline; a
// finite one waits at least 1 ms (a timeout of 0 gives up at once rather than never).
inline absl::Duration WaitTimeout(std::optional<double> timeout) {
  return AtLeastOneMillisecond(ToDuration(timeout));
}

// [(key, bytes), ...] of key-value entries.
template <class Entries>
py::list EntryList(const Entries& kvs) {
  py::list entries;
  for (const auto& kv : kvs) {
    entries.append(py::make_tuple(py::str(kv.key()), py::bytes(kv.value())));
  }
  return entries;
}

// Binds name and name_async to one implementation taking `async` after the agent.
template <class F, class R, class... Args>
void BothOf(AgentClass& cls, const std::string& name, F f,
            R (F::*)(PyAgent&, bool, Args...) const) {
  cls.def(name.c_str(), [f](PyAgent& self, Args... args) { return f(self, false, args...); });
  cls.def((name + "_async").c_str(),
          [f](PyAgent& self, Args... args) { return f(self, true, args...); });
}

template <class F>
void Both(AgentClass& cls, const std::string& name, F f) {
  BothOf(cls, name, f, &F::operator());
}

// The job-health methods (agent_health_binding.cc).
void BindAgentHealth(AgentClass& cls);

// wait_for_membership and get_membership, each with its _async form (membership_binding.cc).
void BindMembership(AgentClass& cls);
// A membership as a dict: job, version, members, waiting, min_tasks, max_tasks (with the GIL).
py::object MembershipDict(const proto::JobMembership& membership);

// wait_at_barrier and wait_at_barrier_async, with the optional progress report
// (agent_health_binding.cc).
void BindBarrierWait(AgentClass& cls);

}  // namespace muster::python
