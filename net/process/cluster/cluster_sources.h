// The sources of cluster detection (cluster_environment.h), one function each: what a
// launcher's variables say about this process, before the sources are weighed against each
// other. Internal to net/process.
#pragma once

#include <optional>
#include <string>

#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>

#include "muster/net/process/cluster/cluster_environment.h"

namespace muster::cluster_internal {

// A source's placement, before the leader is settled.
struct Found {
  ClusterPlacement placement;
  std::string leader_host;  // empty: this source does not say
  std::string rank_variable;
  std::string size_variable;
};

using Detected = absl::StatusOr<std::optional<Found>>;

// Each: nullopt when its variables are absent; InvalidArgument naming a malformed variable.
Detected FromMusterRun(const EnvironmentLookup& env);
Detected FromTorchrun(const EnvironmentLookup& env);
Detected FromOpenMpi(const EnvironmentLookup& env);
Detected FromMpich(const EnvironmentLookup& env);
Detected FromPmix(const EnvironmentLookup& env);
Detected FromSlurm(const EnvironmentLookup& env);
// `host_name`: the pod's fully qualified name.
Detected FromKubernetes(const EnvironmentLookup& env, absl::string_view host_name);
// RANK and WORLD_SIZE as a user (or a launcher such as deepspeed) sets them for env://.
Detected FromTorchEnv(const EnvironmentLookup& env);

}  // namespace muster::cluster_internal
