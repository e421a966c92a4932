// GuardedMultiplexer's event loop: network-hosted actors (actors/placement.h) and writes
// deferred to the end of a turn.
//
// CAF schedules an actor through the execution unit of whoever sent it a message: the
// multiplexer when the message came off the network (or from a broker), a scheduler worker
// otherwise. CAF 0.17's multiplexer hands every actor to the scheduler, which costs a wake-up
// of a scheduler thread per message and, for the reply, another of the network thread; and it
// runs the work posted on its own thread one hop per turn, each turn with an epoll_wait. Here,
// on the network thread, hosted actors, brokers and posted functions go into one local queue
// that a turn drains completely before it flushes the connections and polls again:
//
//   poll (recv) --> drain: BASP --> coordinator --> KV directory --> BASP (reply queued)
//               --> flush (one send per connection) --> poll
//
// A request that crosses the leader is handled in one thread with three system calls.
#include <thread>

#include <caf/ref_counted.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduled_actor.hpp>

#include "muster/actors/placement.h"
#include "muster/net/transport/guarded_multiplexer.h"

namespace muster {
namespace {

// Messages a hosted actor handles per turn before the others get theirs.
constexpr size_t kHostedThroughput = 64;
// Resumptions per drain before the loop serves the network again.
constexpr int kDrainBudget = 4096;

}  // namespace

void GuardedMultiplexer::exec_later(caf::resumable* job) {
  if (std::this_thread::get_id() == thread_id() && looping_) {
    auto kind = job->subtype();
    if (kind == caf::resumable::io_actor || kind == caf::resumable::function_object ||
        (kind == caf::resumable::scheduled_actor &&
         IsNetworkHosted(*static_cast<caf::scheduled_actor*>(job)))) {
      local_.emplace_back(job, /*add_ref=*/false);  // adopts the caller's reference
      return;
    }
  }
  default_multiplexer::exec_later(job);
}

void GuardedMultiplexer::run() {
  looping_ = true;
  while (num_socket_handlers() > 0) {
    DrainLocal();
    FlushDeferredWrites();
    poll_once(/*block=*/local_.empty());
  }
  looping_ = false;
  local_.clear();  // the system is shutting down: nothing more runs here
  DropDeferredWrites();
}

void GuardedMultiplexer::DrainLocal() {
  for (int budget = kDrainBudget; budget > 0 && !local_.empty(); --budget) {
    caf::intrusive_ptr<caf::resumable> job = std::move(local_.front());
    local_.pop_front();
    if (job->subtype() != caf::resumable::scheduled_actor) {
      resume(std::move(job));  // CAF's own handling of brokers and function objects
      continue;
    }
    // As a scheduler worker does: an actor with more messages goes to the back of the queue
    // (keeping its reference); one that is done or waits drops the reference.
    if (job->resume(this, kHostedThroughput) == caf::resumable::resume_later) {
      local_.push_back(std::move(job));
    }
  }
}

bool GuardedMultiplexer::DefersFlushes() const {
  return std::this_thread::get_id() == thread_id() && looping_;
}

}  // namespace muster
