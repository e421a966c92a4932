// Undoes, when an entry point returns, the thread-local logger reference that CAF leaves on a
// thread which used an actor system from outside an actor (scoped_actor, spawn): CAF keeps that
// reference for the thread's whole life, and ~actor_system waits until it is released, so a
// program that destroys a system while such a thread lives (a thread pool, a test fixture)
// hangs. Every public entry point of Agent, DistributedRuntimeClient and Leader that touches
// the system holds one; a thread that had a logger before (CAF's own threads, a caller's
// scoped_actor) keeps it.
#pragma once

#include <caf/logger.hpp>

namespace muster {

class ThreadLoggerGuard {
 public:
  ThreadLoggerGuard() : had_logger_(caf::logger::current_logger() != nullptr) {}
  ~ThreadLoggerGuard();
  ThreadLoggerGuard(const ThreadLoggerGuard&) = delete;
  ThreadLoggerGuard& operator=(const ThreadLoggerGuard&) = delete;

 private:
  bool had_logger_;
};

}  // namespace muster
