// muster._muster.detect_cluster: where this process runs
// (net/process/cluster/cluster_environment.h), for muster.Agent.from_environment() and the
// muster:// rendezvous; parse_spare_assignment: the task a spare of `muster run --spares` is given
// (net/process/launch_environment.h).
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "common.h"
#include "muster/net/process/cluster/cluster_environment.h"
#include "muster/net/process/launch_environment.h"

namespace py = pybind11;

namespace muster::python {

void BindDetectCluster(py::module_& m) {
  m.def(
      "detect_cluster",
      []() -> py::object {
        std::optional<ClusterPlacement> found = ValueOrThrow(DetectClusterFromEnvironment());
        if (!found) return py::none();
        const ClusterPlacement& p = *found;
        py::dict d;
        d["source"] = p.source;
        d["evidence"] = p.evidence;
        d["leader"] = p.leader;
        d["job"] = p.job;
        d["task"] = p.task_id;
        d["num_tasks"] = p.num_tasks;
        d["local_task"] = p.local_task;
        d["num_local_tasks"] = p.num_local_tasks;
        d["node"] = p.node;
        d["num_nodes"] = p.num_nodes;
        d["generation"] = p.generation;
        d["round"] = p.round;
        d["text"] = PlacementText(p);
        return d;
      },
      "The task and leader this process's launcher or cluster gives it (muster run, torchrun, "
      "Open MPI, PMIx, MPICH, Slurm, Kubernetes), as a dict, or None. Raises "
      "InvalidArgumentError naming the variables at fault (sources that disagree, a leader "
      "that cannot be derived).");
  m.def(
      "parse_spare_assignment",
      [](const std::string& text) {
        py::list variables;
        for (const auto& [name, value] : ValueOrThrow(ParseSpareAssignment(text))) {
          variables.append(py::make_tuple(name, value));
        }
        return variables;
      },
      py::arg("text"),
      "The (name, value) pairs of a spare's assignment (NAME=VALUE lines of the variables a "
      "launcher gives a task). Raises InvalidArgumentError naming a line that is not one.");
}

}  // namespace muster::python
