// GuardedMultiplexer's event loop: network-hosted actors (actors/caf/placement.h) and writes
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
//
// CAF also hands actors to the scheduler directly, without an execution unit: a remote actor's
// proxy that dies with its connection sends its down and exit messages that way, as does
// anon_send. The node's scheduler (MakeNodeScheduler) keeps a hosted actor woken like that on
// the network thread too, so a lost connection is handled there from end to end.
#include <utility>

#include <caf/atom.hpp>
#include <caf/io/middleman.hpp>
#include <caf/policy/work_sharing.hpp>
#include <caf/policy/work_stealing.hpp>
#include <caf/ref_counted.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduled_actor.hpp>
#include <caf/scheduler/coordinator.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/settings.hpp>

#include "muster/actors/caf/placement.h"
#include "muster/actors/caf/scheduled_printer.h"
#include "muster/net/transport/wire/guarded_multiplexer.h"

namespace muster {
namespace {

// Messages a hosted actor handles per turn before the others get theirs.
constexpr size_t kHostedThroughput = 64;
// Resumptions per drain before the loop serves the network again.
constexpr int kDrainBudget = 4096;

// The loop this thread serves while its run() does: set only on a network thread.
thread_local GuardedMultiplexer* this_thread_loop = nullptr;

// CAF's coordinator for `Policy`, with hosted actors kept on the network thread, and CAF's
// printer (aout) on the scheduler instead of a thread of its own (actors/caf/scheduled_printer.h).
template <class Policy>
class NodeScheduler final : public caf::scheduler::coordinator<Policy> {
  using Base = caf::scheduler::coordinator<Policy>;

 public:
  using Base::Base;

  void enqueue(caf::resumable* job) override {
    if (GuardedMultiplexer::AdoptOnNetworkThread(job)) return;
    if (GuardedMultiplexer::PostToNetworkThread(job)) return;
    Base::enqueue(job);
  }

 protected:
  void start() override {
    Base::start();  // the workers, the clock's thread, and CAF's detached printer
    caf::actor& printer = this->utility_actors_[caf::scheduler::abstract_coordinator::printer_id];
    caf::actor detached = std::exchange(
        printer, this->system().template spawn<caf::hidden>(ScheduledPrinter, PrinterSink()));
    caf::anon_send_exit(detached, caf::exit_reason::user_shutdown);  // its thread ends
  }

  void stop() override {
    // CAF stops its utility actors after its workers, which an event-based printer needs.
    caf::actor printer = this->printer();
    {
      caf::scoped_actor self{this->system(), /*hide=*/true};
      caf::anon_send_exit(printer, caf::exit_reason::user_shutdown);
      self->wait_for(printer);
    }
    Base::stop();
  }
};

}  // namespace

caf::actor_system::module* MakeNodeScheduler(caf::actor_system& system) {
  auto policy = caf::get_or(system.config(), "scheduler.policy", caf::atom("stealing"));
  if (policy == caf::atom("testing")) return new caf::scheduler::test_coordinator(system);
  if (policy == caf::atom("sharing")) return new NodeScheduler<caf::policy::work_sharing>(system);
  return new NodeScheduler<caf::policy::work_stealing>(system);
}

bool GuardedMultiplexer::PostToNetworkThread(caf::resumable* job) {
  if (job->subtype() != caf::resumable::scheduled_actor) return false;
  auto* actor = static_cast<caf::scheduled_actor*>(job);
  if (!IsNetworkPinned(*actor)) return false;
  auto* loop = dynamic_cast<GuardedMultiplexer*>(&actor->home_system().middleman().backend());
  // On its own loop's thread the actor was adopted already (AdoptOnNetworkThread); the network
  // thread of another actor system in this process posts it like any other thread.
  if (loop == nullptr || loop == this_thread_loop ||
      !loop->serving_.load(std::memory_order_acquire)) {
    return false;
  }
  // Holds the caller's reference: a posted function dropped unrun (the loop stopped) releases it.
  loop->post([loop, held = caf::intrusive_ptr<caf::resumable>(job, /*add_ref=*/false)]() mutable {
    caf::resumable* adopted = held.detach();
    if (!loop->Adopt(adopted, /*any_kind=*/false)) caf::intrusive_ptr_release(adopted);
  });
  return true;
}

bool GuardedMultiplexer::AdoptOnNetworkThread(caf::resumable* job) {
  return this_thread_loop != nullptr && this_thread_loop->Adopt(job, /*any_kind=*/false);
}

bool GuardedMultiplexer::Adopt(caf::resumable* job, bool any_kind) {
  if (this_thread_loop != this) return false;
  auto kind = job->subtype();
  // A hosted actor of another actor system in this process stays with that system's loop.
  auto* actor =
      kind == caf::resumable::scheduled_actor ? static_cast<caf::scheduled_actor*>(job) : nullptr;
  bool hosted = actor != nullptr && IsNetworkHosted(*actor) && &actor->home_system() == &system();
  bool here =
      hosted ||
      (any_kind && (kind == caf::resumable::io_actor || kind == caf::resumable::function_object));
  if (here) local_.emplace_back(job, /*add_ref=*/false);  // adopts the caller's reference
  return here;
}

void GuardedMultiplexer::exec_later(caf::resumable* job) {
  if (!Adopt(job, /*any_kind=*/true)) default_multiplexer::exec_later(job);
}

void GuardedMultiplexer::run() {
  this_thread_loop = this;
  serving_.store(true, std::memory_order_release);
  while (num_socket_handlers() > 0) {
    DrainLocal();
    FlushDeferredWrites();
    // What the turn registered (a TLS connection's flush asks for EPOLLOUT at once) must reach
    // epoll before it blocks: CAF applies it only after its next wait.
    handle_internal_events();
    poll_once(/*block=*/local_.empty());
  }
  serving_.store(false, std::memory_order_release);
  this_thread_loop = nullptr;
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

bool GuardedMultiplexer::DefersFlushes() const { return this_thread_loop == this; }

}  // namespace muster
