// The classes of the muster._muster extension module, one Bind function per file.
#pragma once

#include <pybind11/pybind11.h>

namespace muster::python {

void BindAgent(pybind11::module_& m);   // agent_binding.cc
void BindLeader(pybind11::module_& m);  // leader_binding.cc
// muster._muster.barrier_progress_text (barrier_progress_binding.cc).
void BindBarrierProgressText(pybind11::module_& m);
// muster._muster.detect_cluster (cluster_binding.cc).
void BindDetectCluster(pybind11::module_& m);
// muster._muster._store_api and _store_handle, for muster._muster_torch (store_api.cc).
void BindStoreApi(pybind11::module_& m);

}  // namespace muster::python
