// The worker side of Muster: one Agent per task process. It registers the task with the leader,
// sends heartbeats, shares data through the key-value store, meets other tasks at barriers and
// learns of their failures through an error callback.
//
// Threads: every blocking method may be called from any thread EXCEPT from inside an actor (it
// waits for the agent actor's answer). Async methods return at once; their callback runs on
// one of the actor system's threads, never under the caller's locks (CallAsync's inside the
// agent actor's turn: see there). The error, preemption and watch callbacks run in order on the
// agent's callback runner, off the network thread: they may call blocking Agent methods.
//
// State machine (the seed agent's): DISCONNECTED --Connect--> RUNNING --error--> ERROR,
// Reset: ERROR --> DISCONNECTED, Shutdown: any --> DISCONNECTED. A call in the wrong state
// returns FailedPrecondition naming the state. With leader_reconnect_timeout a lost leader is
// waited for while RUNNING (Status().reconnecting) and the calls are re-sent once it is back.
// See docs/agent.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/str_cat.h>
#include <absl/synchronization/mutex.h>
#include <absl/synchronization/notification.h>
#include <absl/time/time.h>
#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/response_type.hpp>

#include "muster/actors/caf/reply_sink.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/vocabulary/kv_calls.h"
#include "muster/net/agent/actor/agent_actor.h"
#include "muster/net/agent/per_process/heartbeat_batcher_actor.h"
#include "muster/net/process/thread_logger_guard.h"
#include "muster/net/transport/node_config.h"
#include "muster/net/transport/wire/frame_guard.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

class DirectChannel;
class WritesInFlight;

// How a key-value write stores its key.
struct KvWriteOptions {
  bool allow_overwrite = false;  // InsertKeyValue only
  // The key belongs to this task's incarnation: the leader deletes it when the incarnation
  // ends (failure, restart, shutdown), with a watch event like any delete. A later write that
  // is not ephemeral makes the key persistent.
  bool ephemeral = false;
};

// A periodic report while a task waits at a barrier (Agent::WaitAtBarrier with progress).
struct BarrierProgressOptions {
  absl::Duration every = absl::Seconds(10);
  // Called every `every` with the open instance (arrived/total, the tasks still missing, how
  // long it has waited), on an actor-system thread. BarrierProgressText() summarises it.
  std::function<void(const proto::BarrierInfo&)> on_progress;
};

// "barrier <id>: 6/8 arrived after 12s; missing worker/[3,5]": one line, the same on every
// participant.
std::string BarrierProgressText(const proto::BarrierInfo& info);

struct AgentOptions {
  // HOST:PORT of the leader; an HA job's leaders as HOST:PORT,HOST:PORT (tried in turn; a
  // standby names the active one: docs/operations.md, "High availability"), or
  // etcd://ETCD:2379[,ETCD:2379...]/HA-NAME to read them from etcd when the agent is created
  // (asked again until register_timeout while none is registered, with wait_for_leader), and,
  // when there were two or more, again when none of those it knows is active.
  std::string leader = "127.0.0.1:7400";
  std::string job_name = "worker";
  int task_id = 0;
  // The task may fail and rejoin (its job must be recoverable at the leader too).
  bool recoverable = false;
  uint64_t incarnation = 0;  // 0: a fresh random one
  // Take the task only if no live incarnation holds it: Connect() then fails with
  // AlreadyExists (naming the holder) instead of failing the holder, the agent stays
  // DISCONNECTED (no error callback), and the caller may claim another task of the job. How
  // processes without fixed task ids (torchrun nodes) share a job.
  bool claim = false;
  // Heartbeats go out every heartbeat_timeout / 2. Zero (the default): the leader's, which it
  // sends with its answer to Connect() (10 s from a leader that sends none). A value longer
  // than the leader's (which would let the leader judge the task stale) makes Connect() fail
  // with FailedPrecondition naming both; a shorter one is kept. The actor system's CAF
  // connection timeout is set before connecting: see WorkerNodeOptions.
  absl::Duration heartbeat_timeout = absl::ZeroDuration();
  // Connect() retries until this deadline (a leader that is not up yet is normal); with an
  // etcd:// leader, Create() reading the leaders counts against it.
  absl::Duration register_timeout = absl::Hours(1);
  // A leader that is not up yet is expected (job start: workers may start before it): a
  // refused connection (nothing listening at `leader`) is retried until register_timeout, whose
  // DeadlineExceeded then says "nothing listening at HOST:PORT". false: Connect() (and a call
  // before it) fails at once with Unavailable "nothing listening at HOST:PORT", and so does a
  // leader that closes the connection before its handshake. A TLS handshake this node rejects
  // (a leader of another CA, or without TLS) fails it at once either way.
  bool wait_for_leader = true;
  // Shutdown() waits this long (+5 s) for the leader's shutdown barrier.
  absl::Duration shutdown_barrier_timeout = absl::Seconds(10);
  // Timeout of calls that do not block at the leader.
  absl::Duration rpc_timeout = absl::Seconds(30);
  // Connect retry policy: each attempt is bounded; backoff is jittered and doubles.
  absl::Duration connect_attempt_timeout = absl::Seconds(1);
  absl::Duration initial_backoff = absl::Milliseconds(20);
  absl::Duration max_backoff = absl::Seconds(1);
  // Set to use a leader running in the same process instead of `leader` (e.g. task 0 hosting
  // the coordinator).
  CoordinatorActor local_leader;
  // Set (to one SpawnHeartbeatBatcher per process) when a process hosts several tasks: their
  // heartbeats then reach the leader as one message per batching window.
  HeartbeatBatcherActor heartbeat_batcher;
  // Set (to one SpawnBarrierCombiner per process) when a process hosts many tasks that meet at
  // the same barriers: the leader then releases them with one message per process.
  BarrierCombinerActor barrier_combiner;
  // What destroying a connected Agent does. true: it leaves the job with Shutdown() (through
  // the shutdown barrier when the leader has one). false (the reference's
  // agent_destruction_without_shutdown): it only drops its connection, as a crashing process
  // would; the leader handles that as a lost task under its policy (a recoverable task may
  // then register again as a new incarnation).
  bool shutdown_on_destruction = true;
  // Key-value calls made by the blocking methods (not ephemeral writes) go on the calling
  // thread over connections of the agent's own to the leader's direct port, when its leader
  // offers one (net/agent/direct/direct_channel.h, docs/agent.md "Direct calls"); otherwise,
  // and when a direct call cannot be made, through the agent actor. false: always the actor.
  bool direct_calls = true;
  // ... as long as the agent's actor system hosts at most this many agents with direct_calls:
  // the calls of more agents of one process go better through the process's one connection to
  // the leader, which carries many calls per frame.
  static constexpr int kMaxDirectAgentsPerSystem = 16;
  // Requests larger than this are refused here with ResourceExhausted (a leader closes the
  // connection of a peer whose frame is over its --max-frame-size). Match the leader's limit.
  size_t max_request_bytes = WireLimits{}.max_frame_bytes - kFrameEnvelopeBytes;
  // The job token of a leader started with one (muster serve --token-file). Empty: read the
  // file named by $MUSTER_TOKEN_FILE if set, else present none. Never logged.
  std::string token;
  // Called once when the leader tells this task that the job will be preempted (another task,
  // or this one, called NotifyPreemption), on the agent's callback runner (after the callbacks
  // before it): keep it short; it may call blocking Agent methods.
  std::function<void(const proto::PreemptionNotice&)> on_preemption;
  // Called with every new membership of this task's elastic job (docs/agent.md, "Elastic
  // jobs"), on the agent's callback runner, in order: keep it short.
  std::function<void(const proto::JobMembership&)> on_membership;
  // How long a connected agent waits for a lost leader to come back (a leader restarted with
  // its --state-dir) before it fails its calls with Unavailable and goes to ERROR. Meanwhile
  // calls block; once the leader is back the agent registers again and re-sends them, writes
  // applied once (request ids), watches resumed. Zero: a lost leader fails every call at once.
  // Choose it longer than restarting the leader takes. See docs/agent.md.
  absl::Duration leader_reconnect_timeout = absl::ZeroDuration();
};

// The actor-system options a worker should use: Muster's message types, low-latency
// scheduling, and a CAF connection timeout of `heartbeat_timeout` (at least 2 s; zero: 10 s,
// for agents that take the leader's timeout, unknown before connecting) so that a frozen leader
// is detected. An agent whose timeout (its own or the leader's) is shorter than what that
// connection timeout detects in time sends its heartbeats as requests (MayBeatOneWay), so a
// silent leader is still seen within its heartbeat timeout. The worker's own keep-alive frames go
// out every quarter of that timeout (every 2.5 s with the default, 500 ms at least): the leader
// judges tasks by their heartbeats, so they only drive the worker's check, and each one costs the
// leader a wake-up (docs/performance.md, "Heartbeats").
NodeOptions WorkerNodeOptions(absl::Duration heartbeat_timeout = absl::ZeroDuration());

// Whether an agent of an actor system configured with `cfg` sends its heartbeats one-way
// (AgentConfig::one_way_heartbeats): when CAF's connection timeout and keep-alive ticks detect a
// silent leader within 1.25 heartbeat timeouts, as they do with WorkerNodeOptions of the same
// heartbeat timeout (of 2 s or more).
bool MayBeatOneWay(const caf::actor_system_config& cfg, caf::timespan heartbeat_timeout);

// The handle of one GetKeyValueAsync call.
class GetKeyValueHandle {
 public:
  GetKeyValueHandle() = default;
  // Completes this call with Cancelled (unless it has completed already) and withdraws its
  // wait at the leader; other gets of the same key go on. Thread-safe, idempotent.
  void Cancel() const;

 private:
  friend class Agent;
  GetKeyValueHandle(caf::actor_addr agent, caf::actor_addr call)
      : agent_(std::move(agent)), call_(std::move(call)) {}
  caf::actor_addr agent_;  // the agent actor
  caf::actor_addr call_;   // the call's sender (its reply sink)
};

class Agent {
 public:
  using ErrorCallback = std::function<void(const absl::Status&)>;
  using StatusCallback = std::function<void(const absl::Status&)>;
  using StatusOrValueCallback = std::function<void(const absl::StatusOr<std::string>&)>;
  using ChangedKeyValuesCallback = std::function<void(const std::map<std::string, std::string>&)>;
  using ChangeEventCallback = std::function<void(const proto::KeyValueChangeEvent&)>;
  struct CasResult {
    bool succeeded = false;
    std::optional<std::string> current;  // the value after the call; nullopt: absent
  };

  // Creates an agent in DISCONNECTED state. `system` must be configured with ConfigureNode
  // (or NodeConfig) and outlive the agent.
  // Possible errors: InvalidArgument (bad leader address, empty job name, negative task id).
  // With an etcd:// leader (AgentOptions::leader) it reads the leaders from etcd first, which
  // blocks (with wait_for_leader up to register_timeout, which Connect() then has less of):
  // NotFound (no leader of the job registered), Unavailable (etcd did not answer),
  // FailedPrecondition (etcd refused the request: its gRPC gateway is off).
  static absl::StatusOr<std::unique_ptr<Agent>> Create(caf::actor_system& system,
                                                       AgentOptions options,
                                                       ErrorCallback on_error);
  // The agent of the task this process's launcher or cluster names
  // (DetectClusterFromEnvironment: muster run, torchrun, Open MPI, PMIx, MPICH, Slurm, a
  // Kubernetes indexed Job or JobSet): its leader, job and task replace those of `options`.
  // Prints one line on standard error saying what it found and from which variables (not under
  // muster run, which names every task it starts).
  // Possible errors: InvalidArgument (no launcher found; sources of one launch that disagree,
  // naming both; a leader that cannot be derived, naming what to set), and those of Create.
  static absl::StatusOr<std::unique_ptr<Agent>> FromEnvironment(caf::actor_system& system,
                                                                AgentOptions options,
                                                                ErrorCallback on_error);
  // In a spare process of `muster run --spares N` (MUSTER_SPARE set): waits until its launcher
  // gives it a task (a failed task's next generation), then sets that task's variables
  // (MUSTER_TASK, MUSTER_GENERATION, RANK, ...) in this process's environment, as if the
  // launcher had started it as that task, and returns true. In any other process: false at
  // once. `options` gives the connection's settings (token, timeouts); its task is ignored.
  // FromEnvironment calls it first. Possible errors: InvalidArgument (MUSTER_LEADER not set; an
  // assignment naming a variable outside a task's identity), Unavailable (the leader is gone),
  // and those of GetKeyValue.
  static absl::StatusOr<bool> TakeSpareAssignment(caf::actor_system& system,
                                                  const AgentOptions& options = {});
  // Shuts down if still connected (unless options.shutdown_on_destruction is false: then it
  // only drops the connection), stops the agent actor and waits until it has stopped: the
  // error and watch callbacks never run after the destructor returns. Every call still pending
  // is answered once (an async call's callback may run after the destructor returned): blocked
  // gets, barriers and waits with Cancelled, in either case; other calls with Unavailable (the
  // leader may or may not have applied them).
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Registers the task. Possible errors: FailedPrecondition (not DISCONNECTED), InvalidArgument
  // (task unknown to the leader), Aborted (the task restarted or is in ERROR at the leader),
  // AlreadyExists (a newer incarnation registered), DeadlineExceeded (no leader, or the
  // register barrier timed out, naming the missing tasks), Unavailable (nothing listening at
  // the leader's address without wait_for_leader; the leader closed the connection before its
  // handshake).
  absl::Status Connect();
  // Contributes this task's devices and waits for every task; returns the cluster's devices.
  absl::StatusOr<proto::CoordinationServiceDeviceInfo> WaitForAllTasks(
      const proto::CoordinationServiceDeviceInfo& local_devices);
  // A copy of the result of the last successful WaitForAllTasks (empty before).
  proto::CoordinationServiceDeviceInfo GetClusterDeviceInfo() const;
  absl::StatusOr<std::vector<proto::CoordinatedTaskStateInfo>> GetTaskState(
      const std::vector<proto::CoordinatedTask>& tasks);
  // Puts this task in ERROR at the leader (which tells the others) and locally.
  absl::Status ReportError(const absl::Status& error);
  // ERROR -> DISCONNECTED, so that Connect() may be called again.
  absl::Status Reset();
  // Leaves the job (through the shutdown barrier when the leader has one); cancels blocked
  // gets and barriers with Cancelled. Harmless when already disconnected. In ERROR (the job
  // failed) it leaves locally, without a request to the leader, and returns FailedPrecondition
  // naming the error. Possible errors: FailedPrecondition (ERROR), Internal (the shutdown
  // barrier failed).
  absl::Status Shutdown();

  // Key-value store.
  absl::StatusOr<std::string> GetKeyValue(const std::string& key);  // waits forever
  absl::StatusOr<std::string> GetKeyValue(const std::string& key, absl::Duration timeout);
  // Calls `done` exactly once: with the value, or the error (Cancelled after handle.Cancel()).
  GetKeyValueHandle GetKeyValueAsync(const std::string& key, StatusOrValueCallback done,
                                     absl::Duration timeout = absl::InfiniteDuration());
  // Withdraws every blocked get of `key` by this agent: they complete with Cancelled.
  void CancelGetKeyValue(const std::string& key);
  absl::StatusOr<std::string> TryGetKeyValue(const std::string& key);
  absl::StatusOr<std::vector<proto::KeyValueEntry>> GetKeyValueDir(const std::string& directory);
  absl::Status InsertKeyValue(const std::string& key, const std::string& value,
                              bool allow_overwrite = false);
  // With options (ephemeral keys). Possible errors, besides the store's: FailedPrecondition
  // (an ephemeral write while this task is not connected).
  absl::Status InsertKeyValue(const std::string& key, const std::string& value,
                              KvWriteOptions options);
  absl::Status UpdateKeyValue(const std::string& key, const std::string& value,
                              KvWriteOptions options = {});
  absl::Status DeleteKeyValue(const std::string& key);  // the key and everything under it
  absl::StatusOr<int64_t> IncrementKeyValue(const std::string& key, int64_t delta);
  // Sets `desired` if the value is `expected` (nullopt: if the key is absent).
  absl::StatusOr<CasResult> CompareAndSwap(const std::string& key,
                                           std::optional<std::string> expected,
                                           const std::string& desired, KvWriteOptions options = {});
  // Folds the integer values of every key under `directory` (REDUCE_MAX, REDUCE_MIN,
  // REDUCE_SUM). Possible errors: InvalidArgument (the root, a bad op), NotFound (no keys),
  // FailedPrecondition (a value is not a 64-bit decimal), OutOfRange (the sum overflows).
  absl::StatusOr<int64_t> ReduceKeyValueDir(const std::string& directory, proto::ReduceOp op);
  // Waits until at least `count` keys exist under `directory` and returns all of them, in key
  // order (an all-gather is one insert and one WaitForKeys per task). Possible errors:
  // InvalidArgument (the root, count or timeout out of range), DeadlineExceeded (says how many
  // keys there were), Cancelled (Shutdown).
  absl::StatusOr<std::vector<proto::KeyValueEntry>> WaitForKeys(
      const std::string& directory, int64_t count,
      absl::Duration timeout = absl::InfiniteDuration());
  // Calls `on_change` with {key: new value} ("" for deletions) for every change of `key` and
  // of the keys under it, in order.
  absl::Status StartWatchKey(const std::string& key, ChangedKeyValuesCallback on_change);
  absl::Status StartWatchKeyEvents(const std::string& key, ChangeEventCallback on_change);
  absl::Status StopWatchKey(const std::string& key);

  // Barriers: `tasks` empty means every task of the cluster.
  absl::Status WaitAtBarrier(const std::string& id, absl::Duration timeout,
                             const std::vector<proto::CoordinatedTask>& tasks = {});
  void WaitAtBarrierAsync(const std::string& id, absl::Duration timeout,
                          const std::vector<proto::CoordinatedTask>& tasks, StatusCallback done);
  // WaitAtBarrier, reporting the barrier's progress every progress.every while it waits.
  absl::Status WaitAtBarrier(const std::string& id, absl::Duration timeout,
                             const std::vector<proto::CoordinatedTask>& tasks,
                             const BarrierProgressOptions& progress);
  absl::Status CancelBarrier(const std::string& id);
  // The open instance of barrier `id`: who arrived, who is missing, how long it has waited.
  // Possible errors: NotFound (no open instance), InvalidArgument (empty id).
  absl::StatusOr<proto::BarrierInfo> GetBarrierProgress(const std::string& id);

  // Job health (docs/agent.md, "Progress and preemption").
  // Records this task's training step. Cheap (no message): the next heartbeat carries it, and
  // the leader's stuck rule (muster serve --stuck-after, --max-step-lag) compares it with the
  // steps of the other tasks of the job. Thread-safe.
  void ReportProgress(int64_t step);
  // Tells the service that the job will be preempted at `deadline` (absl::InfiniteFuture():
  // unknown) for `reason`. Every task gets a PreemptionNotice (AgentOptions::on_preemption) and
  // then the sync step. Returns true when this call started the protocol, false when another
  // task's notice had already. Possible errors: FailedPrecondition (not connected),
  // InvalidArgument (reason over 4 KiB).
  absl::StatusOr<bool> NotifyPreemption(absl::Time deadline, const std::string& reason);
  // Call once per training step, with the step: true on exactly one step, the same in every
  // task (the highest step any live task had reached when the notice arrived, plus one), once a
  // preemption was notified; false otherwise. Also reports the step (as ReportProgress). Cheap
  // until a notice arrives; after it, a call for a step beyond this task's answered step waits
  // until the leader sent the sync step. Possible errors: FailedPrecondition (the agent is not
  // running), Cancelled (Shutdown while waiting), or the error that put the agent in ERROR
  // while it waited (e.g. Unavailable: the leader was lost).
  absl::StatusOr<bool> ReachedSyncPoint(int64_t step);

  // Elastic jobs (docs/agent.md, "Elastic jobs"): a job of min to max tasks that forms once
  // enough of them connected and admits later ones when its membership next changes.
  // This task's safe point, where its program may re-form its communicators. A member running
  // with `known_version` gets the current membership at once when it changed since, or when no
  // task waits to be admitted; otherwise the call waits until every member called it, and all
  // of them (and the admitted tasks) get the new membership. A task not admitted yet (start
  // with version 0) waits until a membership includes it. A member's rank is its position in
  // `members`; a version that is not the job's (one from before a leader restart) gets the
  // current membership at once. Possible errors: InvalidArgument (a job of fixed size, a
  // negative version), FailedPrecondition (not connected; a later call of this task took this
  // one's place), DeadlineExceeded (names the members that did not arrive), Cancelled
  // (Shutdown).
  absl::StatusOr<proto::JobMembership> WaitForMembership(
      int64_t known_version, absl::Duration timeout = absl::InfiniteDuration());
  // The membership of elastic job `job` now (this task's job when empty), without waiting.
  // Possible errors: InvalidArgument (not an elastic job).
  absl::StatusOr<proto::JobMembership> GetMembership(const std::string& job = "");

  // The connected tasks among `tasks`, agreed by every caller of the same set.
  absl::StatusOr<proto::GetAliveTasksResponse> GetAliveTasks(
      const std::vector<proto::CoordinatedTask>& tasks);
  // Task states of `job` (all jobs when empty); with a version, waits for a newer one.
  absl::StatusOr<proto::WatchJobStateResponse> WatchJobState(
      const std::string& job, std::optional<int64_t> version = std::nullopt);

  // Any call of the agent's protocol, asynchronously: `request` is what the blocking method of
  // the same name sends (a proto::*Request, or caf::connect_atom for Connect), `Response` its
  // proto::*Response. `done` runs exactly once with the response or the error (the same errors
  // as the blocking method), on the actor-system thread that completes the call, inside the
  // agent actor's turn: it must return quickly and must not call the agent's blocking methods
  // (hand such work to a thread of your own). For bindings to other languages. Returns the
  // call's address (what ReleaseGet takes).
  template <class Response, class... Request>
  caf::actor_addr CallAsync(std::function<void(absl::StatusOr<Response>)> done,
                            Request... request) const {
    ThreadLoggerGuard logger_guard;
    return Send<Response>(std::move(done), std::move(request)...);
  }

  // ERROR also when the agent actor has stopped (its actor system is shutting down).
  AgentState state() const;
  // The error that put the agent in ERROR; OK in the other states.
  absl::Status error() const;
  // The state, the error, whether the agent waits for a lost leader (reconnecting), and the
  // watches that could not be resumed after a reconnect.
  AgentStatus Status() const;
  const proto::CoordinatedTask& task() const { return task_; }
  // This agent's incarnation: AgentOptions::incarnation, or the random one drawn for it.
  uint64_t incarnation() const { return incarnation_; }
  // Key-value calls answered over a direct connection so far (AgentOptions::direct_calls).
  uint64_t direct_calls_answered() const;
  // For bindings to other languages: makes a key-value call on the calling thread when it can
  // go direct (AgentOptions::direct_calls), and returns its answer; nullopt when it is to be
  // made through the agent actor (CallAsync) instead, with `request` as this call left it (a
  // write keeps the request id of its direct attempt). `get_key`: a blocking get's key
  // (CancelGetKeyValue withdraws it). The call gives up with DeadlineExceeded after rpc_timeout,
  // a get 5 s after its own timeout (when the leader's DeadlineExceeded should have come).
  // `interrupted`, when set, is asked every 50 ms while the call waits: true ends it with
  // Cancelled (its connection closes, which withdraws a blocking get at the leader). `hold`,
  // for a get: when it returns nullopt, the get's hold, to be passed to ReleaseGet with the
  // address CallAsync returned; a CancelGetKeyValue(key) that lands between the two is then not
  // lost (ReleaseGet cancels that call, that one only, at the agent actor). 0 without direct
  // calls. Defined for the requests of InsertKeyValue, GetKeyValue, TryGetKeyValue,
  // IncrementKeyValue, CompareAndSwap, DeleteKeyValue and GetKeyValueDir.
  template <class Request>
  std::optional<absl::StatusOr<KvCallResponse<Request>>> TryDirect(
      Request& request, const std::string& get_key,
      const std::function<bool()>& interrupted = nullptr, uint64_t* hold = nullptr) const;
  // Gives back a get's hold (TryDirect) once CallAsync has returned the call's address `call`.
  void ReleaseGet(uint64_t hold, const caf::actor_addr& call = {}) const;
  // For a write that TryDirect gave a request id and then left to the agent actor (it returned
  // nullopt): what to run once the actor answered it (with any outcome; not when its caller
  // merely stopped waiting, since the actor may still send it again), so that the ids of later
  // writes tell the leader its reply is no longer needed. Runs on any thread, after the agent
  // is gone too; null for any other request. Never run, it only makes the leader keep more
  // replies of this agent (up to its bound per client).
  template <class Request>
  std::function<void()> EndOfDirectWrite(const Request& request) const;
  // Ends every direct get waiting now with Cancelled ("... is shutting down", or "... was
  // destroyed while the call waited" without shutdown_on_destruction) and makes no direct call
  // until the agent registers again: a binding's close() before it drops the agent.
  void StopDirectCalls();

 private:
  // What the blocking key-value methods need for direct calls (AgentOptions::direct_calls).
  struct DirectCalls {
    std::shared_ptr<DirectChannel> channel;  // null: every call through the actor
    absl::Duration rpc_timeout;
    size_t max_request_bytes = 0;
    bool identify_writes = false;            // writes carry request ids (leader_reconnect_timeout)
    uint64_t client = 0;                     // their client id
    std::shared_ptr<WritesInFlight> writes;  // and their sequence numbers
    // The agents of this agent's actor system that may call directly (agent.cc): over
    // kMaxDirectAgentsPerSystem, every call goes through the actor.
    std::shared_ptr<std::atomic<int>> system_agents;
  };
  // What `options` ask of direct calls, for an agent of `system` (agent_direct.cc); sets the
  // channel in `config`.
  static DirectCalls MakeDirectCalls(caf::actor_system& system, const AgentOptions& options,
                                     AgentConfig& config);
  Agent(caf::actor_system& system, AgentControlActor actor, CallbackRunnerActor callbacks,
        proto::CoordinatedTask task, uint64_t incarnation, bool shutdown_on_destruction,
        std::shared_ptr<AgentProgress> progress, DirectCalls direct);
  // Sends one request to the agent actor; `done` gets its answer (see CallAsync).
  // Returns the call's sender (its reply sink), by which a cancel names the call.
  template <class Response, class... Request>
  caf::actor_addr Send(std::function<void(absl::StatusOr<Response>)> done,
                       Request&&... request) const;
  // Send with `request` made already; `receiver_gone` (when not OK) is what `done` gets when the
  // agent actor is gone, instead of the transport error.
  template <class Response>
  caf::actor_addr SendMessage(std::function<void(absl::StatusOr<Response>)> done,
                              caf::message request, absl::Status receiver_gone = {}) const;
  template <class Response, class... Args>
  absl::StatusOr<Response> Ask(Args&&... args) const;
  // Ask, giving `sent` the call's address once the request is on its way, before waiting for
  // the answer.
  template <class Response, class... Args>
  absl::StatusOr<Response> AskThen(const std::function<void(const caf::actor_addr&)>& sent,
                                   Args&&... args) const;
  // TryDirect's attempt, the get's hold taken (0: none).
  template <class Request>
  std::optional<absl::StatusOr<KvCallResponse<Request>>> Attempt(
      Request& request, const std::string& get_key, const std::function<bool()>& interrupted,
      uint64_t hold) const;
  // TryDirect, else Ask.
  template <class Response, class Request>
  absl::StatusOr<Response> AskKv(Request request, const std::string& get_key = {}) const;

  caf::actor_system& system_;
  AgentControlActor actor_;
  CallbackRunnerActor callbacks_;
  proto::CoordinatedTask task_;
  uint64_t incarnation_;
  bool shutdown_on_destruction_;
  std::shared_ptr<AgentProgress> progress_;
  DirectCalls direct_;
  // The error of a call the agent actor dropped unanswered (its actor system is stopping); made
  // once, copied into each call's reply sink.
  caf::error unanswered_;
  mutable absl::Mutex devices_mutex_;
  proto::CoordinationServiceDeviceInfo cluster_devices_ ABSL_GUARDED_BY(devices_mutex_);
};

template <class Response, class... Request>
caf::actor_addr Agent::Send(std::function<void(absl::StatusOr<Response>)> done,
                            Request&&... request) const {
  using Answer = typename caf::response_type<typename AgentControlActor::signatures,
                                             std::decay_t<Request>...>::type;
  static_assert(std::is_same_v<Answer, caf::detail::type_list<Response>>,
                "the agent actor answers this request with another response type");
  return SendMessage<Response>(std::move(done),
                               caf::make_message(std::forward<Request>(request)...));
}

template <class Response>
caf::actor_addr Agent::SendMessage(std::function<void(absl::StatusOr<Response>)> done,
                                   caf::message request, absl::Status receiver_gone) const {
  return RequestWithSink(
      caf::actor_cast<caf::strong_actor_ptr>(actor_), std::move(request),
      [done = std::move(done), receiver_gone = std::move(receiver_gone)](caf::message& reply) {
        if (reply.match_elements<Response>()) {
          done(std::move(reply.get_mutable_as<Response>(0)));
        } else if (reply.match_elements<caf::error>()) {
          const caf::error& error = reply.get_as<caf::error>(0);
          if (!receiver_gone.ok() && error == caf::sec::request_receiver_down) {
            done(receiver_gone);
          } else {
            done(ToStatus(error));
          }
        } else {
          done(absl::InternalError(
              absl::StrCat("unexpected answer from the agent actor: ", caf::to_string(reply))));
        }
      },
      unanswered_);
}

template <class Response, class... Args>
absl::StatusOr<Response> Agent::Ask(Args&&... args) const {
  return AskThen<Response>(nullptr, std::forward<Args>(args)...);
}

template <class Response, class... Args>
absl::StatusOr<Response> Agent::AskThen(const std::function<void(const caf::actor_addr&)>& sent,
                                        Args&&... args) const {
  ThreadLoggerGuard logger_guard;
  struct Slot {
    absl::Notification answered;
    absl::StatusOr<Response> result;
  };
  auto slot = std::make_shared<Slot>();
  caf::actor_addr call = Send<Response>(
      [slot](absl::StatusOr<Response> result) {
        slot->result = std::move(result);
        slot->answered.Notify();
      },
      std::forward<Args>(args)...);
  if (sent) sent(call);
  slot->answered.WaitForNotification();
  return std::move(slot->result);
}

}  // namespace muster
