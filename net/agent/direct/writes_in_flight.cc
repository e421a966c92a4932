#include "muster/net/agent/direct/writes_in_flight.h"

namespace muster {

WritesInFlight::Started WritesInFlight::Start() {
  absl::MutexLock lock(&mutex_);
  uint64_t seq = ++last_;
  in_flight_.insert(seq);
  return {seq, *in_flight_.begin()};
}

void WritesInFlight::End(uint64_t seq) {
  absl::MutexLock lock(&mutex_);
  in_flight_.erase(seq);
}

}  // namespace muster
