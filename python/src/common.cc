#include "common.h"

#include <pthread.h>

#include <cmath>
#include <system_error>
#include <thread>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"

namespace muster::python {

std::string TaskString(const proto::CoordinatedTask& task) { return TaskName(task); }

namespace {

// What the leader saw of a stuck task (the TaskStuck of its error), as from_status's `stuck`.
py::dict StuckDict(const proto::TaskStuck& stuck) {
  py::dict d;
  d["task"] = TaskString(stuck.task());
  d["step"] = stuck.step();
  switch (stuck.reason()) {
    case proto::TaskStuck::STALLED:
      d["reason"] = "stalled";
      break;
    case proto::TaskStuck::LAGGING:
      d["reason"] = "lagging";
      break;
    default:
      d["reason"] = "unspecified";
  }
  d["stalled_for"] = stuck.stalled_for_ms() / 1000.0;
  d["min_other_step"] = stuck.min_other_step();
  d["max_other_step"] = stuck.max_other_step();
  d["median_step"] = stuck.median_step();
  return d;
}

}  // namespace

absl::StatusOr<int64_t> CounterOf(const proto::IncrementKeyValueResponse& response) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(response.kv().value(), &value)) {
    return absl::InternalError(absl::StrCat("not a counter: ", response.kv().value()));
  }
  return value;
}

py::object MakeException(const absl::Status& status) {
  py::object source = py::none();
  if (auto payload = GetCoordinationError(status);
      payload.has_value() && payload->has_source_task()) {
    source = py::str(TaskString(payload->source_task()));
  }
  py::object stuck = py::none();
  if (auto task_stuck = GetTaskStuck(status)) stuck = StuckDict(*task_stuck);
  py::object failed = py::none();
  if (auto task = FailedTaskOf(status)) failed = py::str(TaskString(*task));
  return py::module_::import("muster._errors")
      .attr("from_status")(static_cast<int>(status.code()), std::string(status.message()), source,
                           stuck, failed);
}

void RegisterStatusErrors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object exception = MakeException(e.status());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())), exception.ptr());
    }
  });
  (void)m;
}

absl::Duration ToDuration(const std::optional<double>& seconds) {
  if (!seconds.has_value()) return absl::InfiniteDuration();
  if (std::isnan(*seconds) || *seconds < 0) {
    throw py::value_error(
        absl::StrCat("a timeout must be a number of seconds >= 0 (or None: no "
                     "limit); got ",
                     *seconds));
  }
  if (std::isinf(*seconds) || *seconds > 1e9) return absl::InfiniteDuration();
  return absl::Seconds(*seconds);
}

Dispatcher& Dispatcher::Get() {
  static auto* dispatcher = new Dispatcher();  // never destroyed: posted to at any time
  return *dispatcher;
}

void Dispatcher::Post(std::function<void()> work) {
  absl::MutexLock lock(&mutex_);
  if (stopped_) return;
  queue_.push_back(std::move(work));
  if (started_) return;
  running_batch_ = true;  // until the thread has its Python state and waits
  try {
    std::thread([this] { Run(); }).detach();  // Get()'s dispatcher is never destroyed
    started_ = true;
  } catch (const std::system_error&) {
    running_batch_ = false;  // no thread: the next Post tries again
  }
}

namespace {
thread_local bool on_dispatcher_thread = false;
}  // namespace

bool Dispatcher::OnItsThread() { return on_dispatcher_thread; }

namespace {
std::atomic<unsigned long> main_thread{0};
}  // namespace

void RememberMainThread() {
  main_thread.store(
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>());
}

bool OnMainThread() { return PyThread_get_thread_ident() == main_thread.load(); }

void Dispatcher::Run() {
  on_dispatcher_thread = true;
  pthread_setname_np(pthread_self(), "muster-dispatch");
  PyGILState_Ensure();                          // this thread's Python state, kept for its life
  PyThreadState* python = PyEval_SaveThread();  // and no GIL while it waits
  while (true) {
    std::deque<std::function<void()>> batch;
    {
      absl::MutexLock lock(&mutex_);
      running_batch_ = false;
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
        return stopped_ || !queue_.empty();
      };
      mutex_.Await(absl::Condition(&ready));
      if (stopped_) return;
      batch.swap(queue_);
      running_batch_ = true;  // Stop() waits for it: the interpreter must not end under it
    }
    PyEval_RestoreThread(python);
    for (auto& work : batch) {
      if (stopped_) break;  // the interpreter is exiting
      try {
        work();
      } catch (py::error_already_set& error) {
        error.discard_as_unraisable("a muster callback");
      } catch (const std::exception& error) {
        PyErr_SetString(PyExc_RuntimeError, error.what());
        PyErr_WriteUnraisable(nullptr);
      }
    }
    batch.clear();  // the work's captures, under the GIL too
    python = PyEval_SaveThread();
  }
}

void Dispatcher::Stop(absl::Duration grace) {
  absl::MutexLock lock(&mutex_);
  stopped_ = true;
  queue_.clear();
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return !running_batch_; };
  mutex_.AwaitWithTimeout(absl::Condition(&idle), grace);
}

}  // namespace muster::python
