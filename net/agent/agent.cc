#include "muster/net/agent/agent.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/time/clock.h>
#include <caf/defaults.hpp>
#include <caf/event_based_actor.hpp>

#include "muster/messages/incarnation.h"
#include "muster/messages/requests/barrier_requests.h"
#include "muster/messages/requests/kv_requests.h"
#include "muster/messages/requests/task_requests.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/direct/direct_channel.h"
#include "muster/net/agent/session/etcd/etcd_security.h"
#include "muster/net/agent/session/etcd/ha_leader_registry.h"
#include "muster/net/agent/session/leader_addresses.h"
#include "muster/net/leader/auth/job_token.h"
#include "muster/net/process/cluster/cluster_environment.h"
#include "muster/net/process/launch_environment.h"
#include "muster/net/process/thread_logger_guard.h"
#include "muster/net/transport/wire/guarded_multiplexer.h"

namespace muster {
namespace {

caf::timespan ToSpan(absl::Duration duration) { return absl::ToChronoNanoseconds(duration); }

// `end`: when register_timeout runs out (reading etcd counts against it).
absl::StatusOr<ConnectOptions> LeaderOptions(const AgentOptions& options, absl::Time end) {
  ConnectOptions leader;
  std::string list = options.leader;
  if (absl::StartsWith(options.leader, kEtcdLeaderScheme)) {
    // An HA job's leaders, the active one first; with wait_for_leader, waited for.
    absl::StatusOr<std::vector<std::string>> read =
        AwaitHaLeaders(options.leader, end - absl::Now(), options.wait_for_leader);
    if (!read.ok()) return read.status();
    list = absl::StrJoin(*read, ",");
    // Read again by the session when none of these takes it: a leader started since.
    leader.registry = options.leader;
    leader.registry_security = RegistrySecurity(leader.registry);
  }
  // "HOST:PORT", or an HA job's leaders "HOST:PORT,HOST:PORT" (tried in turn).
  std::vector<std::string> addresses = SplitLeaderList(list);
  if (addresses.empty()) addresses.push_back(list);
  for (size_t i = 0; i < addresses.size(); ++i) {
    auto parsed = ParseLeaderAddress(addresses[i]);
    if (!parsed.ok()) return parsed.status();
    if (i == 0) {
      leader.host = parsed->first;
      leader.port = parsed->second;
    } else {
      leader.other_leaders.push_back(addresses[i]);
    }
  }
  if (addresses.size() > LeaderAddresses::kMax) {
    return absl::InvalidArgumentError(absl::StrCat("at most ", LeaderAddresses::kMax,
                                                   " leader addresses, not ", addresses.size()));
  }
  leader.timeout = ToSpan(options.register_timeout);
  leader.wait_for_leader = options.wait_for_leader;
  leader.attempt_timeout = ToSpan(options.connect_attempt_timeout);
  leader.initial_backoff = ToSpan(options.initial_backoff);
  leader.max_backoff = ToSpan(options.max_backoff);
  return leader;
}

}  // namespace

bool MayBeatOneWay(const caf::actor_system_config& cfg, caf::timespan heartbeat_timeout) {
  // CAF checks the connection timeout on each of the node's keep-alive ticks, and not at all
  // without them: a silent leader is seen within timeout + interval.
  auto timeout = caf::get_or(cfg, "middleman.connection-timeout",
                             caf::defaults::middleman::connection_timeout);
  auto interval = caf::get_or(cfg, "middleman.heartbeat-interval",
                              caf::defaults::middleman::heartbeat_interval);
  return timeout > caf::timespan{0} && interval > caf::timespan{0} &&
         timeout + interval <= heartbeat_timeout + heartbeat_timeout / 4;
}

NodeOptions WorkerNodeOptions(absl::Duration heartbeat_timeout) {
  NodeOptions options;
  if (heartbeat_timeout <= absl::ZeroDuration()) heartbeat_timeout = absl::Seconds(10);
  absl::Duration timeout = std::max(heartbeat_timeout, absl::Seconds(2));
  options.connection_timeout = ToSpan(timeout);
  // CAF checks the timeout on each of the node's own keep-alive ticks: a frozen leader is
  // detected within 1.25 timeouts.
  options.connection_heartbeat_interval = ToSpan(timeout / 4);
  return options;
}

absl::StatusOr<std::unique_ptr<Agent>> Agent::FromEnvironment(caf::actor_system& system,
                                                              AgentOptions options,
                                                              ErrorCallback on_error) {
  if (absl::StatusOr<bool> spare = TakeSpareAssignment(system, options); !spare.ok()) {
    return spare.status();
  }
  auto placement = DetectClusterFromEnvironment();
  if (!placement.ok()) return placement.status();
  if (!*placement) {
    return absl::InvalidArgumentError(
        "no launcher found in the environment (muster run, torchrun, mpirun, srun, a "
        "Kubernetes indexed Job): start this process with one, or set MUSTER_LEADER, "
        "MUSTER_JOB and MUSTER_TASK");
  }
  // muster run names each task it starts itself.
  if ((*placement)->source != "muster run") {
    std::fprintf(stderr, "muster: %s\n", PlacementText(**placement).c_str());
  }
  options.leader = (*placement)->leader;
  options.job_name = (*placement)->job;
  options.task_id = (*placement)->task_id;
  return Create(system, std::move(options), std::move(on_error));
}

absl::StatusOr<std::unique_ptr<Agent>> Agent::Create(caf::actor_system& system,
                                                     AgentOptions options, ErrorCallback on_error) {
  ThreadLoggerGuard logger_guard;
  if (options.job_name.empty() || options.task_id < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid task: job \"", options.job_name, "\", task id ", options.task_id));
  }
  if (absl::Status tls = CheckTlsFiles(TlsFilesOf(system.config())); !tls.ok()) return tls;
  const absl::Time register_end = absl::Now() + options.register_timeout;
  auto leader = options.local_leader ? ConnectOptions{} : LeaderOptions(options, register_end);
  if (!leader.ok()) return leader.status();
  // What reading the leaders from etcd left of register_timeout.
  leader->timeout = ToSpan(std::max(register_end - absl::Now(), absl::Milliseconds(1)));
  AgentConfig config;
  config.task = MakeTask(options.job_name, options.task_id);
  config.task.set_recoverable(options.recoverable);
  config.incarnation = options.incarnation != 0 ? options.incarnation : NewIncarnation();
  config.claim = options.claim;
  config.leader = *leader;
  config.local_leader = options.local_leader;
  config.heartbeat_batcher = options.heartbeat_batcher;
  config.barrier_combiner = options.barrier_combiner;
  if (options.heartbeat_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("heartbeat_timeout must be >= 0 (0: the leader's); got ",
                     absl::FormatDuration(options.heartbeat_timeout)));
  }
  config.heartbeat_timeout = ToSpan(options.heartbeat_timeout);
  // Without a timeout of its own the agent decides once it knows the leader's.
  config.one_way_heartbeats =
      !options.local_leader && (options.heartbeat_timeout == absl::ZeroDuration() ||
                                MayBeatOneWay(system.config(), config.heartbeat_timeout));
  config.shutdown_barrier_timeout = ToSpan(options.shutdown_barrier_timeout);
  config.rpc_timeout = ToSpan(options.rpc_timeout);
  config.max_request_bytes = options.max_request_bytes;
  if (options.leader_reconnect_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("leader_reconnect_timeout must be >= 0; got ",
                     absl::FormatDuration(options.leader_reconnect_timeout)));
  }
  // Infinite (or absurdly long) waits are capped at a year: the actor clock must not overflow.
  config.leader_reconnect_timeout =
      ToSpan(std::min(options.leader_reconnect_timeout, absl::Hours(24 * 365)));
  if (options.token.empty()) {
    auto token = TokenFromEnvironment();
    if (!token.ok()) return token.status();
    options.token = *std::move(token);
  }
  config.token = std::move(options.token);
  config.on_error = std::move(on_error);
  config.on_preemption = std::move(options.on_preemption);
  config.on_membership = std::move(options.on_membership);
  // A process its launcher started for this task says which generation it is (unreadable
  // identity, e.g. a spare still waiting, or no MUSTER_GENERATION: none).
  if (auto launched = LaunchIdentityFromEnvironment();
      launched.ok() && launched->has_value() && std::getenv("MUSTER_GENERATION") != nullptr &&
      (*launched)->job == config.task.job_name() && (*launched)->task_id == config.task.task_id()) {
    config.generation = (*launched)->generation;
  }
  DirectCalls direct = MakeDirectCalls(system, options, config);
  proto::CoordinatedTask task = config.task;
  uint64_t incarnation = config.incarnation;
  std::shared_ptr<AgentProgress> progress = config.progress;
  CallbackRunnerActor callbacks = SpawnCallbackRunner(system);
  AgentControlActor actor = SpawnAgentActor(system, std::move(config), callbacks);
  return std::unique_ptr<Agent>(
      new Agent(system, std::move(actor), std::move(callbacks), std::move(task), incarnation,
                options.shutdown_on_destruction, std::move(progress), std::move(direct)));
}

Agent::Agent(caf::actor_system& system, AgentControlActor actor, CallbackRunnerActor callbacks,
             proto::CoordinatedTask task, uint64_t incarnation, bool shutdown_on_destruction,
             std::shared_ptr<AgentProgress> progress, DirectCalls direct)
    : system_(system),
      actor_(std::move(actor)),
      callbacks_(std::move(callbacks)),
      task_(std::move(task)),
      incarnation_(incarnation),
      shutdown_on_destruction_(shutdown_on_destruction),
      progress_(std::move(progress)),
      direct_(std::move(direct)),
      unanswered_(ToError(absl::UnavailableError(
          absl::StrCat("the agent of ", TaskName(task_),
                       " stopped before answering: its actor system is shutting down")))) {}

template <class Response, class Request>
absl::StatusOr<Response> Agent::AskKv(Request request, const std::string& get_key) const {
  uint64_t hold = 0;
  if (auto direct = TryDirect(request, get_key, nullptr, &hold)) return *std::move(direct);
  std::function<void()> end_of_write = EndOfDirectWrite(request);
  absl::StatusOr<Response> answer = AskThen<Response>(
      [&](const caf::actor_addr& call) { ReleaseGet(hold, call); }, std::move(request));
  if (end_of_write) end_of_write();  // the actor answered it
  return answer;
}

Agent::~Agent() {
  ThreadLoggerGuard logger_guard;
  if (direct_.system_agents) direct_.system_agents->fetch_sub(1, std::memory_order_relaxed);
  if (shutdown_on_destruction_ && state() == AgentState::kRunning) Shutdown().IgnoreError();
  // Without a shutdown, the actor's exit is what the leader sees: its task actor monitors it.
  // The callback runner stops after the callbacks the agent actor sent before it stopped: no
  // callback runs once the destructor has returned.
  caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
  AwaitExit({actor_.address(), callbacks_.address()}, absl::Seconds(10));
}

absl::Status Agent::Connect() {
  return Ask<proto::RegisterTaskResponse>(caf::connect_atom::value).status();
}

absl::StatusOr<proto::CoordinationServiceDeviceInfo> Agent::WaitForAllTasks(
    const proto::CoordinationServiceDeviceInfo& local_devices) {
  auto response = Ask<proto::WaitForAllTasksResponse>(requests::WaitForAllTasks(local_devices));
  if (!response.ok()) return response.status();
  absl::MutexLock lock(&devices_mutex_);
  cluster_devices_ = response->cluster_device_info();
  return cluster_devices_;
}

proto::CoordinationServiceDeviceInfo Agent::GetClusterDeviceInfo() const {
  absl::MutexLock lock(&devices_mutex_);
  return cluster_devices_;
}

absl::StatusOr<std::vector<proto::CoordinatedTaskStateInfo>> Agent::GetTaskState(
    const std::vector<proto::CoordinatedTask>& tasks) {
  auto response = Ask<proto::GetTaskStateResponse>(requests::GetTaskState(tasks));
  if (!response.ok()) return response.status();
  return std::vector<proto::CoordinatedTaskStateInfo>(response->task_state().begin(),
                                                      response->task_state().end());
}

absl::Status Agent::ReportError(const absl::Status& error) {
  return Ask<proto::ReportErrorToServiceResponse>(requests::ReportErrorToService(error)).status();
}

absl::Status Agent::Reset() {
  return Ask<proto::ResetTaskResponse>(proto::ResetTaskRequest{}).status();
}

absl::Status Agent::Shutdown() {
  if (direct_.channel) {
    direct_.channel->CancelAll(
        absl::StrCat("cancelled: the agent of ", TaskName(task_), " is shutting down"));
  }
  return Ask<proto::ShutdownTaskResponse>(proto::ShutdownTaskRequest{}).status();
}

absl::StatusOr<std::string> Agent::GetKeyValue(const std::string& key) {
  return GetKeyValue(key, absl::InfiniteDuration());
}

absl::StatusOr<std::string> Agent::GetKeyValue(const std::string& key, absl::Duration timeout) {
  auto response = AskKv<proto::GetKeyValueResponse>(requests::GetKeyValue(key, timeout), key);
  if (!response.ok()) return response.status();
  return response->kv().value();
}

void GetKeyValueHandle::Cancel() const {
  if (auto agent = caf::actor_cast<AgentControlActor>(agent_)) {
    caf::anon_send(agent, cancel_atom::value, call_);
  }
}

GetKeyValueHandle Agent::GetKeyValueAsync(const std::string& key, StatusOrValueCallback done,
                                          absl::Duration timeout) {
  ThreadLoggerGuard logger_guard;
  // The user's callback runs in an actor of its own, outside the agent actor's turn: it may
  // call the agent's blocking methods. The call's sender names it in a cancel, which this
  // thread's later message cannot overtake. An agent actor that is gone answers as it answers
  // the calls waiting when it stops.
  caf::actor_system& system = system_;
  caf::actor_addr call = SendMessage<proto::GetKeyValueResponse>(
      [&system, done = std::move(done)](absl::StatusOr<proto::GetKeyValueResponse> response) {
        absl::StatusOr<std::string> value =
            response.ok()
                ? absl::StatusOr<std::string>(std::move(*response->mutable_kv()->mutable_value()))
                : absl::StatusOr<std::string>(response.status());
        system.spawn([done, value = std::move(value)] { done(value); });
      },
      caf::make_message(requests::GetKeyValue(key, timeout)),
      absl::CancelledError(absl::StrCat("cancelled: the agent of ", TaskName(task_),
                                        " was destroyed while the call waited")));
  return GetKeyValueHandle(caf::actor_cast<caf::actor_addr>(actor_), std::move(call));
}

void Agent::CancelGetKeyValue(const std::string& key) {
  ThreadLoggerGuard logger_guard;
  // The direct calls and holds first, then the actor: a get that falls back to the actor after
  // this either finds its hold marked (ReleaseGet cancels it at the actor) or reached the actor
  // before this cancel does.
  if (direct_.channel) {
    direct_.channel->Cancel(
        key, absl::StrCat("GetKeyValue(", key, ") was cancelled by CancelGetKeyValue"));
  }
  caf::anon_send(actor_, cancel_atom::value, key);
}

absl::StatusOr<std::string> Agent::TryGetKeyValue(const std::string& key) {
  auto response = AskKv<proto::TryGetKeyValueResponse>(requests::TryGetKeyValue(key));
  if (!response.ok()) return response.status();
  return response->kv().value();
}

absl::StatusOr<std::vector<proto::KeyValueEntry>> Agent::GetKeyValueDir(
    const std::string& directory) {
  auto response = AskKv<proto::GetKeyValueDirResponse>(requests::GetKeyValueDir(directory));
  if (!response.ok()) return response.status();
  return std::vector<proto::KeyValueEntry>(response->kv().begin(), response->kv().end());
}

absl::Status Agent::InsertKeyValue(const std::string& key, const std::string& value,
                                   bool allow_overwrite) {
  return InsertKeyValue(key, value, KvWriteOptions{.allow_overwrite = allow_overwrite});
}

absl::Status Agent::InsertKeyValue(const std::string& key, const std::string& value,
                                   KvWriteOptions options) {
  return AskKv<proto::InsertKeyValueResponse>(
             requests::InsertKeyValue(key, value, options.allow_overwrite, options.ephemeral))
      .status();
}

absl::Status Agent::UpdateKeyValue(const std::string& key, const std::string& value,
                                   KvWriteOptions options) {
  return Ask<proto::UpdateKeyValueResponse>(requests::UpdateKeyValue(key, value, options.ephemeral))
      .status();
}

absl::Status Agent::DeleteKeyValue(const std::string& key) {
  return AskKv<proto::DeleteKeyValueResponse>(requests::DeleteKeyValue(key, /*recursive=*/true))
      .status();
}

absl::StatusOr<int64_t> Agent::IncrementKeyValue(const std::string& key, int64_t delta) {
  auto response = AskKv<proto::IncrementKeyValueResponse>(requests::IncrementKeyValue(key, delta));
  if (!response.ok()) return response.status();
  int64_t value = 0;
  if (!absl::SimpleAtoi(response->kv().value(), &value)) {
    return absl::InternalError(
        absl::StrCat("Failed to parse increment key value: ", response->kv().value()));
  }
  return value;
}

absl::StatusOr<Agent::CasResult> Agent::CompareAndSwap(const std::string& key,
                                                       std::optional<std::string> expected,
                                                       const std::string& desired,
                                                       KvWriteOptions options) {
  auto response = AskKv<proto::CompareAndSwapResponse>(
      requests::CompareAndSwap(key, expected, desired, options.ephemeral));
  if (!response.ok()) return response.status();
  CasResult result{.succeeded = response->succeeded()};
  if (response->exists()) result.current = response->current();
  return result;
}

absl::Status Agent::StartWatchKey(const std::string& key, ChangedKeyValuesCallback on_change) {
  return StartWatchKeyEvents(key, [on_change](const proto::KeyValueChangeEvent& event) {
    on_change({{event.key(), event.value()}});
  });
}

absl::Status Agent::StartWatchKeyEvents(const std::string& key, ChangeEventCallback on_change) {
  return Ask<proto::WatchKeyResponse>(requests::WatchKey(key), WatchCallback{std::move(on_change)})
      .status();
}

absl::Status Agent::StopWatchKey(const std::string& key) {
  return Ask<proto::StopWatchKeyResponse>(requests::StopWatchKey(key)).status();
}

absl::Status Agent::WaitAtBarrier(const std::string& id, absl::Duration timeout,
                                  const std::vector<proto::CoordinatedTask>& tasks) {
  return Ask<proto::BarrierResponse>(requests::Barrier(id, timeout, tasks)).status();
}

void Agent::WaitAtBarrierAsync(const std::string& id, absl::Duration timeout,
                               const std::vector<proto::CoordinatedTask>& tasks,
                               StatusCallback done) {
  // The user's callback runs in an actor of its own, outside the agent actor's turn: it may
  // call the agent's blocking methods.
  caf::actor_system& system = system_;
  CallAsync<proto::BarrierResponse>(
      [&system, done](absl::StatusOr<proto::BarrierResponse> response) {
        system.spawn([done, status = response.status()] { done(status); });
      },
      requests::Barrier(id, timeout, tasks));
}

absl::Status Agent::CancelBarrier(const std::string& id) {
  return Ask<proto::CancelBarrierResponse>(requests::CancelBarrier(id)).status();
}

absl::StatusOr<proto::GetAliveTasksResponse> Agent::GetAliveTasks(
    const std::vector<proto::CoordinatedTask>& tasks) {
  return Ask<proto::GetAliveTasksResponse>(requests::GetAliveTasks(tasks));
}

absl::StatusOr<proto::WatchJobStateResponse> Agent::WatchJobState(const std::string& job,
                                                                  std::optional<int64_t> version) {
  return Ask<proto::WatchJobStateResponse>(requests::WatchJobState(job, version));
}

AgentStatus Agent::Status() const {
  auto status = Ask<AgentStatus>(agent_state_atom::value);
  if (status.ok()) return *std::move(status);
  return AgentStatus{
      .state = AgentState::kError,
      .error = absl::UnavailableError(absl::StrCat(
          "the agent of ", TaskName(task_),
          " has stopped (its actor system is shutting down): ", status.status().message()))};
}

AgentState Agent::state() const { return Status().state; }

absl::Status Agent::error() const { return Status().error; }

}  // namespace muster
