// The coordinator's view of job health (coordinator_health.cc): the steps tasks report on their
// heartbeats with the stuck rule over them, checked every check_period, and the preemption
// protocol once a task announced one. Its data only; the coordinator's health handlers act on it.
#pragma once

#include <optional>

#include <caf/timespan.hpp>

#include "muster/actors/health/preemption.h"
#include "muster/actors/health/progress_tracker.h"

namespace muster {

struct JobHealth {
  ProgressTracker progress;
  caf::timespan check_period{0};  // 0: the stuck rule is off, no timer runs
  std::optional<Preemption> preemption;
};

}  // namespace muster
