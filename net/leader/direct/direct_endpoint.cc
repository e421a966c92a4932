#include "muster/net/leader/direct/direct_endpoint.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_set.h>
#include <absl/strings/str_cat.h>
#include <caf/event_based_actor.hpp>
#include <caf/io/broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/receive_policy.hpp>
#include <caf/io/system_messages.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include "muster/messages/direct/direct_frames.h"
#include "muster/messages/status/status_codec.h"
#include "muster/messages/vocabulary/kv_calls.h"
#include "muster/net/leader/auth/token_gate_actor.h"
#include "muster/net/leader/direct/plain_doorman.h"
#include "muster/net/transport/wire/guarded_multiplexer.h"

namespace muster {
namespace {

using frame_timeout_atom = caf::atom_constant<caf::atom("dframe")>;
using admit_timeout_atom = caf::atom_constant<caf::atom("dadmit")>;

// A payload up to this size is held without asking the node's budget of unfinished frames.
constexpr uint32_t kUnbudgetedBytes = 64u << 10;

struct EndpointConfig {
  CoordinatorActor target;
  std::string token;
  GuardedMultiplexer* mpx = nullptr;
  uint32_t max_frame_bytes = 0;
  caf::timespan admit_timeout{0};
  caf::timespan frame_timeout{0};
};

struct ConnectionState {
  static inline const char* name = "muster.direct_connection";
  ~ConnectionState() { ReleaseBudget(); }
  void ReleaseBudget() {
    if (budgeted > 0 && config->mpx != nullptr) config->mpx->ReleaseFrameBytes(budgeted);
    budgeted = 0;
  }

  std::shared_ptr<const EndpointConfig> config;
  caf::io::connection_handle hdl;
  uint32_t awaited = 0;  // > 0: the payload of this length is being read
  // When the payload being read must be whole, and whether a timer will look at it. One timer
  // at a time, not one per frame: it looks again later when the deadline moved.
  caf::actor_clock::time_point frame_deadline;
  bool watching = false;
  size_t budgeted = 0;  // bytes taken from the node's budget for the payload being read
  bool busy = false;    // a call is at the coordinator
  bool large = false;   // the call's request was over kUnbudgetedBytes
};

using ConnectionPointer = caf::stateful_actor<ConnectionState, caf::io::broker>*;

void Close(ConnectionPointer self) {
  self->close(self->state.hdl);
  self->quit();
}

void Send(ConnectionPointer self, const proto::DirectResponse& response) {
  std::string frame = EncodeDirectFrame(response);
  self->write(self->state.hdl, frame.size(), frame.data());
  self->flush(self->state.hdl);
}

// Answers a call. A connection whose request or answer was over kUnbudgetedBytes closes after
// the answer (the client keeps no such connection either): CAF's buffers keep the size of the
// largest frame a connection carried, and an idle connection must not hold megabytes.
void Answer(ConnectionPointer self, const proto::DirectResponse& response) {
  self->state.busy = false;
  Send(self, response);
  if (self->state.large || response.ByteSizeLong() > kUnbudgetedBytes) Close(self);
}

// Answers, then closes: a refusal the client reads before it sees the connection end.
void Refuse(ConnectionPointer self, const absl::Status& status) {
  Send(self, DirectError(status));
  Close(self);
}

void ExpectHeader(ConnectionPointer self) {
  self->state.awaited = 0;
  self->configure_read(self->state.hdl, caf::io::receive_policy::exactly(kDirectHeaderBytes));
}

template <class Request>
void Forward(ConnectionPointer self, Request request) {
  using Response = KvCallResponse<Request>;
  self->state.busy = true;
  self->request(self->state.config->target, caf::infinite, std::move(request))
      .then([self](Response& response) { Answer(self, DirectReply(std::move(response))); },
            [self](caf::error& error) { Answer(self, DirectError(ToStatus(error))); });
}

void Dispatch(ConnectionPointer self, proto::DirectRequest& request) {
  if (!IsDirectCall(request)) {
    Send(self, DirectError(absl::InvalidArgumentError(
                   "not a direct call: ephemeral writes and every call but the key-value "
                   "store's go through the agent")));
    return;
  }
  switch (request.call_case()) {
    case proto::DirectRequest::kInsertKeyValue:
      return Forward(self, std::move(*request.mutable_insert_key_value()));
    case proto::DirectRequest::kGetKeyValue:
      return Forward(self, std::move(*request.mutable_get_key_value()));
    case proto::DirectRequest::kTryGetKeyValue:
      return Forward(self, std::move(*request.mutable_try_get_key_value()));
    case proto::DirectRequest::kIncrementKeyValue:
      return Forward(self, std::move(*request.mutable_increment_key_value()));
    case proto::DirectRequest::kCompareAndSwap:
      return Forward(self, std::move(*request.mutable_compare_and_swap()));
    case proto::DirectRequest::kDeleteKeyValue:
      return Forward(self, std::move(*request.mutable_delete_key_value()));
    case proto::DirectRequest::kGetKeyValueDir:
      return Forward(self, std::move(*request.mutable_get_key_value_dir()));
    default:
      return;  // IsDirectCall said no
  }
}

caf::behavior Serving(ConnectionPointer self);

// The frame timer: closes a connection whose payload is not whole by its deadline.
void CheckFrameDeadline(ConnectionPointer self) {
  auto& st = self->state;
  st.watching = false;
  if (st.awaited == 0) return;
  auto now = self->clock().now();
  if (now >= st.frame_deadline) return Close(self);
  st.watching = true;
  self->delayed_send(self, st.frame_deadline - now, frame_timeout_atom::value);
}

// Reads a frame's header or payload; `on_request` takes a whole request.
template <class OnRequest>
void OnData(ConnectionPointer self, const std::vector<char>& buf, uint32_t limit,
            OnRequest on_request) {
  auto& st = self->state;
  if (st.awaited == 0) {
    const uint32_t length = DirectFrameLength({buf.data(), buf.size()});
    if (length == 0 || length > limit) {
      return Refuse(self, absl::ResourceExhaustedError(absl::StrCat(
                              "a direct-call frame of ", length, " bytes; at most ", limit,
                              st.config->token.empty() || limit > kDirectHandshakeBytes
                                  ? " (muster serve --max-frame-size)"
                                  : " before the job token")));
    }
    if (length > kUnbudgetedBytes && st.config->mpx != nullptr) {
      if (!st.config->mpx->ReserveFrameBytes(length)) {
        return Refuse(self, absl::ResourceExhaustedError(
                                "the leader holds its budget of unfinished frames; try again"));
      }
      st.budgeted = length;
    }
    st.awaited = length;
    // One timeout for a frame, and one more for each MiB.
    if (st.config->frame_timeout > caf::timespan{0}) {
      st.frame_deadline =
          self->clock().now() + st.config->frame_timeout * (1 + length / (1u << 20));
      if (!st.watching) {
        st.watching = true;
        self->delayed_send(self, st.frame_deadline - self->clock().now(),
                           frame_timeout_atom::value);
      }
    }
    self->configure_read(st.hdl, caf::io::receive_policy::exactly(length));
    return;
  }
  st.ReleaseBudget();
  st.large = buf.size() > kUnbudgetedBytes;
  proto::DirectRequest request;
  if (!request.ParseFromArray(buf.data(), static_cast<int>(buf.size()))) {
    return Refuse(self, absl::InvalidArgumentError("a direct-call frame that is not a request"));
  }
  // At the coordinator, or a second answer queued behind one the socket has not taken yet (a
  // peer that does not read its answers): either way the client did not wait for them.
  if (st.busy || !self->wr_buf(st.hdl).empty()) {
    return Refuse(self, absl::FailedPreconditionError(
                            "a second direct call before the answer to the first: one call at "
                            "a time on a connection"));
  }
  ExpectHeader(self);
  on_request(request);
}

caf::behavior Serving(ConnectionPointer self) {
  const uint32_t limit = self->state.config->max_frame_bytes;
  return caf::message_handler{
      [self, limit](const caf::io::new_data_msg& msg) {
        OnData(self, msg.buf, limit, [self](proto::DirectRequest& request) {
          if (request.has_authenticate()) {
            Send(self, DirectReply(proto::AuthenticateResponse()));
          } else {
            Dispatch(self, request);
          }
        });
      },
      [self](admit_timeout_atom) {},
      [self](const caf::io::connection_closed_msg&) { self->quit(); },
      [self](frame_timeout_atom) { CheckFrameDeadline(self); },
  };
}

caf::behavior Admitting(ConnectionPointer self) {
  return {
      [self](const caf::io::new_data_msg& msg) {
        OnData(self, msg.buf, kDirectHandshakeBytes, [self](proto::DirectRequest& request) {
          if (!request.has_authenticate()) {
            return Refuse(self, absl::UnauthenticatedError(
                                    "present the job token first (MUSTER_TOKEN, muster serve "
                                    "--token)"));
          }
          if (!TokensEqual(request.authenticate().token(), self->state.config->token)) {
            return Refuse(self, absl::UnauthenticatedError(
                                    "the job token is not this leader's (MUSTER_TOKEN)"));
          }
          Send(self, DirectReply(proto::AuthenticateResponse()));
          self->become(Serving(self));
        });
      },
      [self](admit_timeout_atom) { Close(self); },
      [self](const caf::io::connection_closed_msg&) { self->quit(); },
      [self](frame_timeout_atom) { CheckFrameDeadline(self); },
  };
}

caf::behavior Connection(ConnectionPointer self, caf::io::connection_handle hdl,
                         std::shared_ptr<const EndpointConfig> config) {
  auto& st = self->state;
  st.config = std::move(config);
  st.hdl = hdl;
  ExpectHeader(self);
  if (st.config->token.empty()) return Serving(self);
  if (st.config->admit_timeout > caf::timespan{0}) {
    self->delayed_send(self, st.config->admit_timeout, admit_timeout_atom::value);
  }
  return Admitting(self);
}

caf::behavior Acceptor(caf::io::broker* self, caf::io::doorman_ptr doorman,
                       std::shared_ptr<const EndpointConfig> config) {
  self->add_doorman(std::move(doorman));
  // Monitored, not linked: one connection's failure must not end the others. They end with the
  // endpoint.
  auto open = std::make_shared<absl::flat_hash_set<caf::actor>>();
  self->set_down_handler(
      [open](caf::down_msg& msg) { open->erase(caf::actor_cast<caf::actor>(msg.source)); });
  self->attach_functor([open] {
    for (const caf::actor& connection : *open) {
      caf::anon_send_exit(connection, caf::exit_reason::user_shutdown);
    }
  });
  return {
      [self, open, config](const caf::io::new_connection_msg& msg) {
        if (open->size() >= DirectEndpoint::kMaxConnections) {
          self->close(msg.handle);
          return;
        }
        caf::actor connection = self->fork(Connection, msg.handle, config);
        self->monitor(connection);
        open->insert(std::move(connection));
      },
      [self](const caf::io::acceptor_closed_msg&) { self->quit(); },
  };
}

}  // namespace

absl::StatusOr<std::unique_ptr<DirectEndpoint>> DirectEndpoint::Open(caf::actor_system& system,
                                                                     const std::string& host,
                                                                     uint16_t port) {
  auto* mpx = dynamic_cast<GuardedMultiplexer*>(&system.middleman().backend());
  if (mpx == nullptr) {
    return absl::FailedPreconditionError(
        "direct calls need the node's guarded network layer (ConfigureNode)");
  }
  auto doorman = NewPlainDoorman(*mpx, port, host);
  if (!doorman) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen for direct calls on ", host.empty() ? "*" : host, ":", port, ": ",
        system.render(doorman.error()), "; pick another --direct-port, or 'off'"));
  }
  uint16_t bound = (*doorman)->port();
  return std::unique_ptr<DirectEndpoint>(new DirectEndpoint(system, std::move(*doorman), bound));
}

DirectEndpoint::DirectEndpoint(caf::actor_system& system, caf::io::doorman_ptr doorman,
                               uint16_t port)
    : system_(system), doorman_(std::move(doorman)), port_(port) {}

DirectEndpoint::~DirectEndpoint() { Stop(); }

void DirectEndpoint::Serve(CoordinatorActor target, std::string token) {
  if (!doorman_) return;
  auto* mpx = dynamic_cast<GuardedMultiplexer*>(&system_.middleman().backend());
  auto config = std::make_shared<EndpointConfig>();
  config->target = std::move(target);
  config->token = std::move(token);
  config->mpx = mpx;
  const WireLimits& limits = mpx->limits();
  config->max_frame_bytes =
      limits.max_frame_bytes > 0 ? limits.max_frame_bytes : std::numeric_limits<uint32_t>::max();
  config->admit_timeout = std::chrono::milliseconds(limits.handshake_timeout_ms);
  config->frame_timeout = std::chrono::milliseconds(limits.frame_progress_timeout_ms);
  acceptor_ = system_.middleman().spawn_broker(Acceptor, std::move(doorman_), std::move(config));
  doorman_ = nullptr;
}

void DirectEndpoint::Stop() {
  doorman_ = nullptr;  // never served: its socket closes with it
  if (acceptor_) {
    caf::anon_send_exit(acceptor_, caf::exit_reason::user_shutdown);
    acceptor_ = nullptr;
  }
}

}  // namespace muster
