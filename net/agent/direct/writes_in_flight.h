// The writes of one request-id client (an agent's direct calls) that are not answered yet, shared
// by the threads that make them. Each write's request id tells the leader the lowest of them
// (RequestId.answered_below): the leader forgets the replies it keeps for re-sent writes below
// it, so that it keeps about one reply per write in flight instead of its bound per client.
//
//   write: Start (numbered, in flight) --End--> answered (never sent again)
//
// A write that is never ended only holds the bound where it is: the leader then keeps that
// client's replies up to its own limit, as it does for a client that never says. Start and End
// take a mutex for a set insert or erase and never wait on anything else, so End may run on an
// actor's thread (a binding's reply callback).
#pragma once

#include <cstdint>
#include <set>

#include <absl/base/thread_annotations.h>
#include <absl/synchronization/mutex.h>

namespace muster {

class WritesInFlight {
 public:
  struct Started {
    uint64_t seq = 0;             // the write's sequence number: 1, 2, ...
    uint64_t answered_below = 0;  // the lowest still in flight (this one included)
  };

  // A new write, in flight until End(seq).
  Started Start();
  // The write numbered `seq` was answered and will not be sent again (unknown numbers: nothing).
  void End(uint64_t seq);

 private:
  absl::Mutex mutex_;
  uint64_t last_ ABSL_GUARDED_BY(mutex_) = 0;
  std::set<uint64_t> in_flight_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace muster
