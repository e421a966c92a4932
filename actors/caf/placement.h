// CAF 0.17 workaround: its multiplexer hands every actor a message from the network to the
// scheduler, a thread wake-up per message and another for the reply (see the event loop,
// net/transport/wire/event_loop.cc).
//
// Where an actor runs. An actor marked network-hosted promises that its handlers never block
// and stay short (no I/O, no waiting, no user callbacks). A node's network thread then runs it
// itself when a message for it arrives from the network, or from another actor that the
// network thread is running (net/transport/wire/guarded_multiplexer.h), instead of handing it to a
// scheduler thread: a request that crosses the leader's coordinator, a KV directory and the
// reply's connection is handled in one thread, without a wake-up. Messages from anywhere else
// (timers, blocking actors, user threads) still go through the scheduler, so a hosted actor runs
// wherever its next message comes from, one thread at a time as every CAF actor does. An actor
// pinned to the network thread runs there whoever wakes it: a message from another thread reaches
// it through the event loop's wake-up pipe (one hand-off) instead of a scheduler thread (which
// would then hand its sends to the network thread: two). For the agent actor, which user threads
// call and whose every call goes to the network.
//
//   unmarked --HostOnNetworkThread(self)--> hosted   (for the actor's lifetime)
//   unmarked --PinToNetworkThread(self)---> hosted and pinned
#pragma once

#include <caf/abstract_actor.hpp>
#include <caf/local_actor.hpp>

namespace muster {

// A bit of CAF's per-actor runtime flags that CAF 0.17 leaves unused (it uses 0x0004-0x2000).
inline constexpr int kNetworkHostedFlag = 0x40000000;
inline constexpr int kNetworkPinnedFlag = 0x20000000;

// Marks the calling actor as network-hosted. Call it from the actor itself (its behavior's
// initialisation), before it handles messages.
inline void HostOnNetworkThread(caf::local_actor* self) { self->setf(kNetworkHostedFlag); }

// Marks the calling actor as network-hosted and pinned (see above); the same rules as hosted.
inline void PinToNetworkThread(caf::local_actor* self) {
  self->setf(kNetworkHostedFlag | kNetworkPinnedFlag);
}

inline bool IsNetworkHosted(const caf::abstract_actor& actor) {
  return actor.getf(kNetworkHostedFlag);
}

inline bool IsNetworkPinned(const caf::abstract_actor& actor) {
  return actor.getf(kNetworkPinnedFlag);
}

}  // namespace muster
