#include "muster/net/process/thread_logger_guard.h"

namespace muster {

ThreadLoggerGuard::~ThreadLoggerGuard() {
  if (!had_logger_) caf::logger::set_current_actor_system(nullptr);
}

}  // namespace muster
