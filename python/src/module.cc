// muster._muster: the C++ library for Python. The public API is the pure-Python package around
// it (python/muster/); this module holds the agent and leader classes and the process-wide
// shutdown that muster registers with atexit.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "common.h"
#include "runtime.h"

namespace py = pybind11;

PYBIND11_MODULE(_muster, m) {
  m.doc() = "Muster's C++ core; use the muster package, not this module";
  muster::python::RegisterStatusErrors(m);
  muster::python::BindAgent(m);
  muster::python::BindLeader(m);
  muster::python::BindBarrierProgressText(m);
  muster::python::BindDetectCluster(m);
  m.def(
      "_shutdown",
      [] {
        muster::python::Dispatcher::Get().Stop();
        muster::python::Runtime::Get().Shutdown();
      },
      py::call_guard<py::gil_scoped_release>(),
      "Closes every agent and leader, then stops the actor systems (atexit).");
}
