// muster._muster: the C++ library for Python. The public API is the pure-Python package around
// it (python/muster/); this module holds the agent and leader classes and the process-wide
// shutdown that muster registers with atexit.
#include <pybind11/pybind11.h>

#include <absl/synchronization/mutex.h>

#include "bindings.h"
#include "common.h"
#include "runtime.h"

namespace py = pybind11;

PYBIND11_MODULE(_muster, m) {
  m.doc() = "Muster's C++ core; use the muster package, not this module";
  // Debian's abseil is built with absl::Mutex's deadlock detection on (a debug build's default):
  // every lock then updates a process-wide graph under a global lock, and a call's waiter pays
  // it. Off here, as in a release build of abseil (tests keep it on).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  muster::python::RememberMainThread();
  muster::python::RegisterStatusErrors(m);
  muster::python::BindAgent(m);
  muster::python::BindLeader(m);
  muster::python::BindBarrierProgressText(m);
  muster::python::BindDetectCluster(m);
  muster::python::BindStoreApi(m);
  m.def("_on_dispatcher_thread", &muster::python::Dispatcher::OnItsThread,
        "True in a callback (the thread that runs them and completes futures).");
  m.def(
      "_shutdown",
      [] {
        muster::python::Dispatcher::Get().Stop();
        muster::python::Runtime::Get().Shutdown();
      },
      py::call_guard<py::gil_scoped_release>(),
      "Closes every agent and leader, then stops the actor systems (atexit).");
}
