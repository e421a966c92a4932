// Muster key-value clients: sequential round trips (one event-based actor, or a blocking
// scoped_actor for comparison) and concurrent clients (actors, one request in flight each).
// Variants of the round trip: tryget, insert (KV directory actor behind the coordinator) and
// state (GetTaskState, answered by the coordinator itself); insert-durable is insert against a
// leader with a state dir; agent and agent-async are a TryGet through muster::Agent. The
// concurrent clients read (tryget) or write (insert*) a key each.
#include <string>
#include <vector>

#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <absl/synchronization/mutex.h>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "muster/actors/caf/placement.h"
#include "muster/bench/harness.h"
#include "muster/bench/muster_bench.h"
#include "muster/messages/requests/kv_requests.h"
#include "muster/messages/requests/task_requests.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/agent.h"
#include "muster/net/agent/calls/call_deadlines.h"

namespace muster::bench {
namespace {

constexpr char kKey[] = "bench/key";
constexpr auto kRequestTimeout = std::chrono::seconds(10);

// A finite request timeout costs two wake-ups of CAF's clock thread per request (set, cancel).
caf::duration Timeout(const ClientArgs& args) {
  if (args.request_timeout_ms <= 0) return caf::duration{caf::infinite};
  return caf::duration{std::chrono::milliseconds(args.request_timeout_ms)};
}

template <class Request>
struct ResponseOf;
template <>
struct ResponseOf<proto::TryGetKeyValueRequest> {
  using type = proto::TryGetKeyValueResponse;
};
template <>
struct ResponseOf<proto::InsertKeyValueRequest> {
  using type = proto::InsertKeyValueResponse;
};
template <>
struct ResponseOf<proto::GetTaskStateRequest> {
  using type = proto::GetTaskStateResponse;
};

proto::InsertKeyValueRequest InsertRequest() {
  return requests::InsertKeyValue(kKey, std::string(16, 'v'), /*allow_overwrite=*/true);
}

// Answered by the coordinator itself: the round trip without the hop to a KV directory actor.
proto::GetTaskStateRequest TaskStateRequest() {
  return requests::GetTaskState({MakeTask("worker", 0)});
}

proto::TryGetKeyValueRequest TryGetRequest() { return requests::TryGetKeyValue(kKey); }

[[noreturn]] void Die(const absl::Status& status) {
  std::fprintf(stderr, "muster_bench client: %s\n", status.ToString().c_str());
  std::_Exit(1);
}

[[noreturn]] void Die(const caf::error& error) { Die(ToStatus(error)); }

// Stores the key every client reads, so that TryGet finds it.
void InsertKey(caf::actor_system& system, const CoordinatorActor& leader) {
  caf::scoped_actor self{system};
  self->request(leader, kRequestTimeout, InsertRequest())
      .receive([](const proto::InsertKeyValueResponse&) {}, [](caf::error& error) { Die(error); });
}

template <class Request>
struct LoopState {
  CoordinatorActor leader;
  Request request;
  int64_t warmup = 0;                // untimed requests still to send
  int64_t ops = 0;                   // timed requests (seq)
  caf::actor_clock::time_point end;  // stop time (conc)
  caf::duration timeout;
  // Positive: the client keeps its own deadlines (net/agent/calls/call_deadlines.h), one timer
  // instead of CAF's per-request one (hosted clients with a finite timeout).
  caf::timespan deadline_after{0};
  CallDeadlines deadlines;
  uint64_t next_call = 0;
  std::vector<double> us;
  int64_t done = 0;
  caf::response_promise promise;
};

template <class Request>
using LoopActor = caf::stateful_actor<LoopState<Request>>;

// Sends the next request, one at a time, until `ops` timed requests or the end time.
template <class Request>
void Next(LoopActor<Request>* self, bool timed) {
  auto& st = self->state;
  auto start = self->clock().now();
  bool finished = timed ? st.warmup == 0 && st.done == st.ops : start >= st.end;
  if (finished) {
    if (timed) return st.promise.deliver(st.us), void();
    return st.promise.deliver(st.done), void();
  }
  uint64_t call = st.next_call++;
  caf::duration timeout = st.timeout;
  if (st.deadline_after.count() > 0) {
    if (auto arm = st.deadlines.Add(call, start + st.deadline_after)) {
      self->delayed_send(self, *arm - start, caf::timeout_atom::value);
    }
    timeout = caf::duration{caf::infinite};
  }
  self->request(st.leader, timeout, st.request)
      .then(
          [=](const typename ResponseOf<Request>::type&) {
            auto& st = self->state;
            st.deadlines.Remove(call);
            if (st.warmup > 0) {
              --st.warmup;
              return Next(self, timed);
            }
            ++st.done;
            if (timed) st.us.push_back((self->clock().now() - start).count() / 1e3);
            Next(self, timed);
          },
          [=](caf::error& error) { Die(error); });
}

template <class Request>
void InitLoop(LoopActor<Request>* self, CoordinatorActor leader, Request request,
              const ClientArgs& args) {
  if (IsHostedVariant(args.variant)) {
    HostOnNetworkThread(self);
    self->state.deadline_after =
        std::chrono::milliseconds(std::max<int64_t>(0, args.request_timeout_ms));
  }
  self->state.leader = std::move(leader);
  self->state.request = std::move(request);
  self->state.timeout = Timeout(args);
}

// The deadline timer: a call past its deadline ends the run as CAF's timeout would.
template <class Request>
void ExpireCalls(LoopActor<Request>* self) {
  std::optional<caf::actor_clock::time_point> rearm;
  auto now = self->clock().now();
  if (!self->state.deadlines.TakeExpired(now, rearm).empty()) {
    Die(caf::make_error(caf::sec::request_timeout));
  }
  if (rearm) self->delayed_send(self, *rearm - now, caf::timeout_atom::value);
}

// Sequential round trips: replies to run_atom with the latencies of `ops` requests (µs).
template <class Request>
caf::behavior SeqActor(LoopActor<Request>* self, CoordinatorActor leader, Request request,
                       ClientArgs args) {
  InitLoop(self, std::move(leader), std::move(request), args);
  self->state.warmup = args.warmup;
  self->state.ops = args.ops;
  self->state.us.reserve(static_cast<size_t>(args.ops));
  return {[=](caf::timeout_atom) { ExpireCalls(self); },
          [=](run_atom) {
            self->state.promise = self->make_response_promise();
            Next(self, /*timed=*/true);
            return self->state.promise;
          }};
}

// Back-to-back requests for `duration`: replies to run_atom with the number completed.
template <class Request>
caf::behavior ConcActor(LoopActor<Request>* self, CoordinatorActor leader, Request request,
                        ClientArgs args) {
  InitLoop(self, std::move(leader), std::move(request), args);
  return {[=](caf::timeout_atom) { ExpireCalls(self); },
          [=](run_atom) {
            self->state.end = self->clock().now() + caf::timespan{args.duration_ms * 1'000'000};
            self->state.promise = self->make_response_promise();
            Next(self, /*timed=*/false);
            return self->state.promise;
          }};
}

template <class Request>
std::vector<double> RunSeq(caf::actor_system& system, const CoordinatorActor& leader,
                           const Request& request, const ClientArgs& args) {
  auto actor = system.spawn(SeqActor<Request>, leader, request, args);
  std::vector<double> us;
  caf::scoped_actor self{system};
  self->request(actor, caf::infinite, run_atom::value)
      .receive([&](std::vector<double>& result) { us = std::move(result); },
               [](caf::error& error) { Die(error); });
  return us;
}

// The same loop with a blocking scoped_actor (for the CAF settings comparison).
template <class Request>
std::vector<double> RunSeqBlocking(caf::actor_system& system, const CoordinatorActor& leader,
                                   const Request& request, const ClientArgs& args) {
  caf::scoped_actor self{system};
  std::vector<double> us;
  for (int64_t i = -args.warmup; i < args.ops; ++i) {
    int64_t start = MonoNs();
    self->request(leader, Timeout(args), request)
        .receive([](const typename ResponseOf<Request>::type&) {},
                 [](caf::error& error) { Die(error); });
    if (i >= 0) us.push_back((MonoNs() - start) / 1e3);
  }
  return us;
}

// The round trip through muster::Agent, task worker/0: its blocking TryGetKeyValue (what a C++
// program calls), or with `async` its CallAsync and the caller waiting on a mutex (what the
// Python binding does, without Python).
// A connected agent of task 0 (with the job token, if any) that wrote the key read.
std::unique_ptr<Agent> ConnectAgent(caf::actor_system& system, const ClientArgs& args) {
  AgentOptions options{
      .leader = "127.0.0.1:" + std::to_string(args.port), .job_name = "worker", .task_id = 0};
  options.token = args.token;
  auto agent = Agent::Create(system, options, [](const absl::Status&) {});
  absl::Status connected = agent.ok() ? (*agent)->Connect() : agent.status();
  if (!connected.ok()) Die(connected);
  proto::InsertKeyValueRequest insert = InsertRequest();
  if (absl::Status put = (*agent)->InsertKeyValue(insert.kv().key(), insert.kv().value(),
                                                  /*allow_overwrite=*/true);
      !put.ok()) {
    Die(put);
  }
  return *std::move(agent);
}

std::vector<double> RunSeqAgent(const std::unique_ptr<Agent>& agent, const ClientArgs& args,
                                bool async) {
  std::vector<double> us;
  for (int64_t i = -args.warmup; i < args.ops; ++i) {
    int64_t start = MonoNs();
    absl::Status status;
    if (async) {
      absl::Mutex mutex;
      bool done = false;
      agent->CallAsync<proto::TryGetKeyValueResponse>(
          [&](absl::StatusOr<proto::TryGetKeyValueResponse> result) {
            absl::MutexLock lock(&mutex);
            status = result.status();
            done = true;
          },
          TryGetRequest());
      absl::MutexLock lock(&mutex);
      mutex.Await(absl::Condition(&done));
    } else {
      status = agent->TryGetKeyValue(kKey).status();
    }
    if (!status.ok()) Die(status);
    if (i >= 0) us.push_back((MonoNs() - start) / 1e3);
  }
  return us;
}

}  // namespace

int RunSeqClient(caf::actor_system& system, const ClientArgs& args, bool blocking) {
  bool floor = IsFloorVariant(args.variant);
  // Through muster::Agent: it alone presents the job token (a leader with one refuses the rest).
  std::unique_ptr<Agent> agent;
  CoordinatorActor leader;
  if (absl::StartsWith(args.variant, "agent")) {
    agent = ConnectAgent(system, args);
  } else {
    leader = floor ? ConnectToFloor(system, args.port) : ConnectToLeader(system, args.port);
    if (!floor) InsertKey(system, leader);
  }
  Emit("ready");
  WaitForGo();
  std::vector<double> us;
  if (agent) {
    us = RunSeqAgent(agent, args, args.variant == "agent-async");
  } else if (absl::StartsWith(args.variant, "state")) {
    us = blocking ? RunSeqBlocking(system, leader, TaskStateRequest(), args)
                  : RunSeq(system, leader, TaskStateRequest(), args);
  } else if (absl::StartsWith(args.variant, "insert")) {
    us = blocking ? RunSeqBlocking(system, leader, InsertRequest(), args)
                  : RunSeq(system, leader, InsertRequest(), args);
  } else {
    us = blocking ? RunSeqBlocking(system, leader, TryGetRequest(), args)
                  : RunSeq(system, leader, TryGetRequest(), args);
  }
  EmitSeqResult(us);
  return 0;
}

int RunConcClient(caf::actor_system& system, const ClientArgs& args) {
  bool floor = IsFloorVariant(args.variant);
  CoordinatorActor leader =
      floor ? ConnectToFloor(system, args.port) : ConnectToLeader(system, args.port);
  if (!floor) InsertKey(system, leader);
  std::vector<caf::actor> actors;
  for (int64_t i = 0; i < args.Count(); ++i) {
    if (absl::StartsWith(args.variant, "insert")) {  // each client overwrites a key of its own
      proto::InsertKeyValueRequest request = InsertRequest();
      request.mutable_kv()->set_key(absl::StrCat(kKey, "/", args.First() + i));
      actors.push_back(
          system.spawn(ConcActor<proto::InsertKeyValueRequest>, leader, request, args));
    } else {
      actors.push_back(
          system.spawn(ConcActor<proto::TryGetKeyValueRequest>, leader, TryGetRequest(), args));
    }
  }
  Emit("ready");
  WaitForGo();
  int64_t start = MonoNs(), ops = 0;
  caf::scoped_actor self{system};
  std::vector<decltype(self->request(actors[0], caf::infinite, run_atom::value))> pending;
  for (auto& actor : actors)
    pending.push_back(self->request(actor, caf::infinite, run_atom::value));
  for (auto& reply : pending) {
    reply.receive([&](int64_t done) { ops += done; }, [](caf::error& error) { Die(error); });
  }
  Emit("result", "ops=" + std::to_string(ops) + " elapsed_ns=" + std::to_string(MonoNs() - start));
  return 0;
}

}  // namespace muster::bench
