// The workload driver shared by the benchmark programs: it forks one server process and a few
// client processes (--role=server / --role=client), runs one workload the same way for every
// system, and prints the results as CSV rows system,variant,workload,param,metric,value,unit.
#pragma once

// Child protocol (records are "R <kind> key=value ..." lines on stdout, see harness.h):
//   server   emits "ready port=P" once it accepts connections; for the heartbeat workload it
//            emits "baseline rss_kib=" first and "sample mono_ns= cpu_ns= rss_kib=" on SIGUSR1.
//   client   emits "ready" once set up, waits for "go" on stdin (not in the failure workload),
//            then emits its results:
//     seq        result median_us= p90_us= p99_us= max_us= over_1ms= ops=
//     conc       result ops= elapsed_ns=
//     barrier    round r= first= last= release= (one per round, CLOCK_MONOTONIC ns), then done
//     bringup    result end=   (ns when its last task was released)
//     heartbeat  result ok= errors=
//     failure    report at_ns=  (when a survivor learnt of the failure)
//     resume     result end= errors=  (ns when every agent's call, made while the leader was
//                down, was answered by the restarted leader)

#include <cstdint>
#include <string>
#include <vector>

#include "muster/bench/harness.h"

namespace muster::bench {

// Runs the workload named by --workload for `system` and prints CSV rows; returns 0 when every
// child answered in time. Children are forked and run `child_main` with --role=server or
// --role=client and the driver's flags.
int RunDriver(const Flags& flags, const std::string& system, ChildMain child_main);

// Client-side parameters, parsed from the flags the driver passes to every client.
struct ClientArgs {
  std::string workload;
  std::string variant;  // the operation measured (tryget, insert, get, add, echo)
  int port = 0;
  int index = 0;         // this client process, 0..procs-1
  int procs = 1;         // client processes
  int64_t param = 1;     // clients (conc) or tasks (barrier, bringup, heartbeat, failure)
  int64_t ops = 20'000;  // timed operations (seq)
  int64_t warmup = 1'000;
  int64_t rounds = 20;  // barrier rounds
  int64_t duration_ms = 1'000;
  int64_t request_timeout_ms = 10'000;  // Muster clients: 0 means no timeout (caf::infinite)
  // Muster: a directory of the job's certificates (`muster tls init`; the leader makes them if
  // missing) for mutual TLS, and the job token; empty: plain TCP, no token.
  std::string tls_dir;
  std::string token;
  // The share of `param` that this client process runs: [first, first + count).
  int64_t First() const { return param * index / procs; }
  int64_t Count() const { return param * (index + 1) / procs - First(); }
};
ClientArgs ParseClientArgs(const Flags& flags);

// Client side of the seq workload: emits "result" with the median, p90 and p99 of `us`.
void EmitSeqResult(const std::vector<double>& us);

}  // namespace muster::bench
