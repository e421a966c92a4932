// The Agent's direct calls (net/agent/direct/direct_channel.h, docs/agent.md "Direct calls"):
// what an agent sets up for them, and the call made on the caller's thread.
#include <atomic>
#include <memory>
#include <type_traits>

#include <absl/container/flat_hash_map.h>
#include <absl/strings/str_cat.h>
#include <absl/synchronization/mutex.h>
#include <absl/time/clock.h>

#include "muster/messages/direct/direct_frames.h"
#include "muster/messages/incarnation.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/agent.h"
#include "muster/net/agent/direct/direct_channel.h"
#include "muster/net/agent/direct/writes_in_flight.h"
#include "muster/net/process/thread_logger_guard.h"

namespace muster {
namespace {

// Whether `request` is a write that already has a request id.
template <class Request>
bool CarriesRequestId(const Request& request) {
  if constexpr (requires { request.has_request_id(); }) return request.has_request_id();
  return false;
}

// The sequence number of a write that carries a request id of `client`; 0 for any other request.
template <class Request>
uint64_t WriteSeqOf(const Request& request, uint64_t client) {
  if constexpr (requires { request.request_id(); }) {
    if (request.has_request_id() && request.request_id().client() == client) {
      return request.request_id().seq();
    }
  }
  return 0;
}

// The agents of each actor system that may make direct calls, counted: the calls of many agents
// of one process go better through the process's one connection to the leader, where a frame
// carries many of them at once, than over a connection per agent (1,024 ranks as threads of 16
// processes on 2 cores: 97 s through it against 129 s direct; 256 ranks: 5.8 s direct against
// 7.6 s; docs/performance.md).
std::shared_ptr<std::atomic<int>> JoinSystemAgents(caf::actor_system* system) {
  static absl::Mutex mutex(absl::kConstInit);
  static auto* counts =
      new absl::flat_hash_map<caf::actor_system*, std::weak_ptr<std::atomic<int>>>;
  absl::MutexLock lock(&mutex);
  std::shared_ptr<std::atomic<int>> count = (*counts)[system].lock();
  if (!count) {
    for (auto it = counts->begin(); it != counts->end();) {
      if (it->second.expired() && it->first != system) {
        counts->erase(it++);
      } else {
        ++it;
      }
    }
    count = std::make_shared<std::atomic<int>>(0);
    (*counts)[system] = count;
  }
  count->fetch_add(1, std::memory_order_relaxed);
  return count;
}

}  // namespace

Agent::DirectCalls Agent::MakeDirectCalls(caf::actor_system& system, const AgentOptions& options,
                                          AgentConfig& config) {
  DirectCalls direct;
  if (!options.direct_calls || options.local_leader) return direct;
  direct.channel = std::make_shared<DirectChannel>();
  direct.rpc_timeout = options.rpc_timeout;
  direct.max_request_bytes = options.max_request_bytes;
  direct.identify_writes = config.leader_reconnect_timeout > caf::timespan{0};
  direct.client = NewIncarnation();
  direct.writes = std::make_shared<WritesInFlight>();
  direct.system_agents = JoinSystemAgents(&system);
  config.direct = direct.channel;
  return direct;
}

uint64_t Agent::direct_calls_answered() const {
  return direct_.channel ? direct_.channel->answered() : 0;
}

void Agent::ReleaseGet(uint64_t hold, const caf::actor_addr& call) const {
  if (hold == 0 || !direct_.channel->ReleaseGet(hold) || !call) return;
  ThreadLoggerGuard logger_guard;
  caf::anon_send(actor_, cancel_atom::value, call);  // after the get, from this thread
}

void Agent::StopDirectCalls() {
  if (!direct_.channel) return;
  direct_.channel->CancelAll(absl::StrCat(
      "cancelled: the agent of ", TaskName(task_),
      shutdown_on_destruction_ ? " is shutting down" : " was destroyed while the call waited"));
}

// A direct call when the route is up; through the agent actor when it is not, or when the call
// could not be made (not sent, or a read, or a write with a request id, lost on the way: the
// actor's own semantics then apply, and the leader answers a write it applied already from its
// record). A write without a request id lost on the way is not made again.
template <class Request>
std::optional<absl::StatusOr<KvCallResponse<Request>>> Agent::TryDirect(
    Request& request, const std::string& get_key, const std::function<bool()>& interrupted,
    uint64_t* hold) const {
  // A get holds its key from here until it is answered, or until the agent actor has it.
  const uint64_t held = hold != nullptr && !get_key.empty() && direct_.channel
                            ? direct_.channel->HoldGet(get_key)
                            : 0;
  const bool had_id = CarriesRequestId(request);
  std::optional<absl::StatusOr<KvCallResponse<Request>>> answer =
      Attempt(request, get_key, interrupted, held);
  if (answer) {
    ReleaseGet(held);
    // A write this attempt numbered is answered (else the caller ends it: EndOfDirectWrite).
    if (uint64_t seq = WriteSeqOf(request, direct_.client); seq != 0 && !had_id) {
      direct_.writes->End(seq);
    }
  } else if (hold != nullptr) {
    *hold = held;
  }
  return answer;
}

template <class Request>
std::optional<absl::StatusOr<KvCallResponse<Request>>> Agent::Attempt(
    Request& request, const std::string& get_key, const std::function<bool()>& interrupted,
    uint64_t hold) const {
  using Response = KvCallResponse<Request>;
  if (!direct_.channel || direct_.system_agents->load(std::memory_order_relaxed) >
                              AgentOptions::kMaxDirectAgentsPerSystem) {
    return std::nullopt;
  }
  absl::Time deadline = absl::Now() + direct_.rpc_timeout;
  if constexpr (std::is_same_v<Request, proto::GetKeyValueRequest>) {
    // The leader answers DeadlineExceeded after the get's timeout; the agent waits 5 s more.
    deadline = request.timeout_in_ms() <= 0
                   ? absl::InfiniteFuture()
                   : absl::Now() + absl::Milliseconds(request.timeout_in_ms()) + absl::Seconds(5);
  }
  constexpr bool kWrite = requires { request.mutable_request_id(); };
  if constexpr (kWrite) {
    if (direct_.identify_writes && !request.has_request_id()) {
      WritesInFlight::Started write = direct_.writes->Start();
      proto::RequestId& id = *request.mutable_request_id();
      id.set_client(direct_.client);
      id.set_seq(write.seq);
      id.set_answered_below(write.answered_below);
    }
  }
  proto::DirectRequest call;
  SetDirectCall(call, request);
  if (!IsDirectCall(call) || call.ByteSizeLong() > direct_.max_request_bytes) return std::nullopt;
  ThreadLoggerGuard logger_guard;
  DirectChannel::Result result = direct_.channel->Call(call, get_key, deadline, interrupted, hold);
  switch (result.outcome) {
    case DirectChannel::Outcome::kAnswered:
      return TakeDirectReply<Response>(result.response);
    case DirectChannel::Outcome::kCancelled:
      if (!result.interrupted && !result.detail.empty()) return absl::CancelledError(result.detail);
      return absl::CancelledError(absl::StrCat("the get of key \"", get_key, "\" was ",
                                               result.interrupted ? "interrupted" : "cancelled"));
    case DirectChannel::Outcome::kTimedOut:
      return absl::DeadlineExceededError(
          absl::StrCat("the leader did not answer within the call's time (",
                       get_key.empty() ? "rpc_timeout" : "the get's timeout and 5 s",
                       "); its connection was closed"));
    case DirectChannel::Outcome::kLost:
      if constexpr (kWrite) {
        if (!request.has_request_id()) {
          return absl::UnavailableError(
              absl::StrCat(result.detail, " before it answered a write of ", TaskName(task_),
                           ": it may or may not have been applied; read the key to know"));
        }
      }
      return std::nullopt;
    case DirectChannel::Outcome::kNotSent:
      return std::nullopt;
  }
  return std::nullopt;
}

template <class Request>
std::function<void()> Agent::EndOfDirectWrite(const Request& request) const {
  uint64_t seq = direct_.writes ? WriteSeqOf(request, direct_.client) : 0;
  if (seq == 0) return nullptr;
  return [writes = direct_.writes, seq] { writes->End(seq); };
}

#define MUSTER_AGENT_TRY_DIRECT(Verb)                                                            \
  template std::optional<absl::StatusOr<proto::Verb##Response>> Agent::TryDirect(                \
      proto::Verb##Request&, const std::string&, const std::function<bool()>&, uint64_t*) const; \
  template std::function<void()> Agent::EndOfDirectWrite(const proto::Verb##Request&) const;
MUSTER_AGENT_TRY_DIRECT(InsertKeyValue)
MUSTER_AGENT_TRY_DIRECT(GetKeyValue)
MUSTER_AGENT_TRY_DIRECT(TryGetKeyValue)
MUSTER_AGENT_TRY_DIRECT(IncrementKeyValue)
MUSTER_AGENT_TRY_DIRECT(CompareAndSwap)
MUSTER_AGENT_TRY_DIRECT(DeleteKeyValue)
MUSTER_AGENT_TRY_DIRECT(GetKeyValueDir)
#undef MUSTER_AGENT_TRY_DIRECT

}  // namespace muster
