// What the Python extension's bindings share: statuses raised as muster's exception classes, a
// wait for an asynchronous call that Ctrl-C can interrupt, and the dispatcher that runs Python
// code (callbacks, futures) on a Python thread, so that no actor thread ever takes the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <absl/base/thread_annotations.h>
#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/synchronization/mutex.h>
#include <absl/time/time.h>

#include "muster/proto/coordination_service.pb.h"

namespace muster::python {

namespace py = pybind11;

// A failed status on its way to Python: translated to muster.Error's subclass for its code.
class StatusError : public std::exception {
 public:
  explicit StatusError(absl::Status status) : status_(std::move(status)) {}
  const char* what() const noexcept override { return "muster status"; }
  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) throw StatusError(status);
}
template <class T>
T ValueOrThrow(absl::StatusOr<T> result) {
  ThrowIfError(result.status());
  return *std::move(result);
}

// The Python exception object for `status` (muster._errors.from_status); needs the GIL.
py::object MakeException(const absl::Status& status);

// The counter an IncrementKeyValue answered with. Possible errors: Internal (not a counter).
absl::StatusOr<int64_t> CounterOf(const proto::IncrementKeyValueResponse& response);

// Registers the StatusError translator.
void RegisterStatusErrors(py::module_& m);

// "/job:worker/task:1"
std::string TaskString(const proto::CoordinatedTask& task);

// Seconds (None: forever) as an absl::Duration. Raises ValueError for negative or NaN.
absl::Duration ToDuration(const std::optional<double>& seconds);

// True on the interpreter's main thread, the one that runs signal handlers, as the module's
// import found it (RememberMainThread, with the GIL).
bool OnMainThread();
void RememberMainThread();

// Runs queued Python work (callbacks, future completions) on a thread of its own, started by
// the first Post(): a process whose agents never call back has no such thread. The thread
// ("muster-dispatch") waits without the GIL and takes it for each batch. Post() is thread-safe
// and never touches Python; work posted after Stop() (interpreter exit) is dropped, and so are
// the Python objects it holds (leaked, never released without the GIL).
class Dispatcher {
 public:
  static Dispatcher& Get();
  // True on the dispatcher's thread: a callback running there that waited for a future it
  // completes would wait forever.
  static bool OnItsThread();
  void Post(std::function<void()> work);
  // Drops queued work and ends the thread, waiting (at most `grace`) for the batch it may be
  // running. Called without the GIL; the batch needs it.
  void Stop(absl::Duration grace = absl::Seconds(1));

 private:
  void Run();

  absl::Mutex mutex_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mutex_);
  bool started_ ABSL_GUARDED_BY(mutex_) = false;
  bool running_batch_ ABSL_GUARDED_BY(mutex_) = false;
  // Set under mutex_ (Await sees it); the thread also reads it between the items of a batch,
  // without the lock, and drops the rest of the batch.
  std::atomic<bool> stopped_{false};
};

// A Python object held from C++ code that may run without the GIL: copies share one reference,
// which is dropped only under the GIL (Release), or leaked when that never happens.
class PyHandle {
 public:
  PyHandle() = default;
  explicit PyHandle(py::object object) : ref_(std::make_shared<Ref>(object.release().ptr())) {}
  // The object; needs the GIL.
  py::object get() const { return py::reinterpret_borrow<py::object>(ref_->ptr); }
  // Drops the reference; needs the GIL.
  void Release() const {
    if (ref_ && ref_->ptr != nullptr) {
      Py_DECREF(ref_->ptr);
      ref_->ptr = nullptr;
    }
  }
  explicit operator bool() const { return ref_ && ref_->ptr != nullptr; }

 private:
  struct Ref {
    explicit Ref(PyObject* p) : ptr(p) {}
    PyObject* ptr;
  };
  std::shared_ptr<Ref> ref_;
};

// One asynchronous result, waited for by a Python thread.
template <class T>
class Waiter {
 public:
  void Set(absl::StatusOr<T> result) {
    absl::MutexLock lock(&mutex_);
    result_ = std::move(result);
  }
  // Waits with the GIL released; every 50 ms takes it to let Python handle signals, so Ctrl-C
  // raises KeyboardInterrupt within ~50 ms (after `on_interrupt` ran). `first`, when set, runs
  // once before the wait, also without the GIL.
  absl::StatusOr<T> Wait(const std::function<void()>& on_interrupt = nullptr,
                         std::function<void()> first = nullptr) {
    while (true) {
      {
        py::gil_scoped_release release;
        if (first) std::exchange(first, nullptr)();
        absl::MutexLock lock(&mutex_);
        auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return result_.has_value(); };
        if (mutex_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(50))) {
          return *std::move(result_);
        }
      }
      if (PyErr_CheckSignals() != 0) {
        if (on_interrupt) on_interrupt();
        throw py::error_already_set();
      }
    }
  }

 private:
  absl::Mutex mutex_;
  std::optional<absl::StatusOr<T>> result_ ABSL_GUARDED_BY(mutex_);
};

// Starts an asynchronous call with `start(done)` and waits for it (see Waiter::Wait). `start`
// runs without the GIL, in the wait's first slice.
template <class T, class Start>
absl::StatusOr<T> WaitFor(Start start, const std::function<void()>& on_interrupt = nullptr) {
  auto waiter = std::make_shared<Waiter<T>>();
  return waiter->Wait(on_interrupt, [&] {
    start([waiter](absl::StatusOr<T> result) { waiter->Set(std::move(result)); });
  });
}

// A concurrent.futures.Future completed through the dispatcher with `convert(result)` (under the
// GIL), or with the muster exception of a failed result. `start` runs without the GIL.
template <class T, class Start, class Convert>
py::object StartFuture(Start start, Convert convert) {
  py::object future = py::module_::import("concurrent.futures").attr("Future")();
  future.attr("set_running_or_notify_cancel")();
  PyHandle handle(future);
  auto done = [handle, convert](absl::StatusOr<T> result) {
    Dispatcher::Get().Post([handle, convert, result = std::move(result)] {
      py::object f = handle.get();
      try {
        if (result.ok()) {
          f.attr("set_result")(convert(*result));
        } else {
          f.attr("set_exception")(MakeException(result.status()));
        }
      } catch (py::error_already_set& error) {
        f.attr("set_exception")(error.value());
      } catch (const StatusError& error) {  // convert refused the answer ("not a counter")
        f.attr("set_exception")(MakeException(error.status()));
      } catch (const std::exception& error) {
        f.attr("set_exception")(py::handle(PyExc_RuntimeError)(error.what()));
      }
      handle.Release();
    });
  };
  {
    py::gil_scoped_release release;
    start(std::move(done));
  }
  return future;
}

}  // namespace muster::python
