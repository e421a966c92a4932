// What the client subcommands (status, kv, task) share: the --leader and --timeout flags, a
// session that connects to the leader within a deadline (never a blocking remote_actor) and asks
// it bounded questions from the calling thread, and how failures and usage errors are reported.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <absl/flags/declare.h>
#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>
#include <absl/time/time.h>
#include <google/protobuf/message.h>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/vocabulary/interfaces.h"
#include "muster/net/process/shutdown_signals.h"
#include "muster/net/transport/node_config.h"
#include "muster/tools/common/command_line.h"
#include "muster/tools/common/leader_call_actor.h"

ABSL_DECLARE_FLAG(std::string, leader);
ABSL_DECLARE_FLAG(std::optional<absl::Duration>, timeout);
ABSL_DECLARE_FLAG(int64_t, max_frame_size);
ABSL_DECLARE_FLAG(bool, wait_for_leader);

namespace muster::cli {

struct LeaderAddress {
  std::string host;
  uint16_t port = 0;
  // An HA job's other leaders, "HOST:PORT" each (the session tries them in turn).
  std::vector<std::string> others;
  // An HA job's leaders given as "etcd://ENDPOINTS/NAME": read again by a session that finds
  // none of them active (empty otherwise).
  std::string registry;
  std::string ToString() const;
  // "HOST:PORT" and the others after it, comma-separated (what the tasks of `muster run` get).
  std::string List() const;
};

// Parses "HOST:PORT" (port 1-65535), or an HA job's leaders "HOST:PORT,HOST:PORT".
// Possible errors: InvalidArgument naming the text and the expected form.
absl::StatusOr<LeaderAddress> ParseLeaderAddress(absl::string_view text);

// The --leader flag, parsed; etcd://ENDPOINTS/NAME is read from etcd (within --timeout, 5 s by
// default). Possible errors: InvalidArgument (missing or malformed); for etcd://, NotFound (no
// leader of the job registered) and Unavailable (etcd did not answer).
absl::StatusOr<LeaderAddress> LeaderFlag();
// The same; with `wait_for_leader` (--wait-for-leader, or `muster run` joining), leaders not in
// etcd yet are asked for again until --timeout (`default_timeout` when it is not given).
absl::StatusOr<LeaderAddress> LeaderFlag(bool wait_for_leader, absl::Duration default_timeout);

// The --timeout flag, or `fallback` when it is not given.
// Possible errors: InvalidArgument (zero or negative).
absl::StatusOr<absl::Duration> TimeoutFlag(absl::Duration fallback);

caf::timespan ToTimespan(absl::Duration duration);

// The largest request the leader takes: its --max-frame-size (this command's --max-frame-size,
// which defaults to the leader's default) less 4 KiB for the frame's own headers; 0: no limit.
// Possible errors: InvalidArgument (negative, or over 2 GiB).
absl::StatusOr<size_t> MaxRequestBytesFlag();

// Prints "muster <command>: <CODE>: <message>" to stderr; returns kExitFailed.
int ReportFailure(absl::string_view command, const absl::Status& status);
// kExitFailed once ReportFailure was called in this process, else kExitOk.
int ExitCodeSoFar();

// Prints "muster <command>: <message>" and a pointer to --help to stderr; returns kExitUsage.
int ReportUsageError(absl::string_view command, const absl::Status& status);
// LeaderFlag's error: a malformed --leader is a usage error (kExitUsage); leaders that could
// not be read from etcd (etcd://) a failure (kExitFailed).
int ReportLeaderFlagError(absl::string_view command, const absl::Status& status);

// Parses `argv` for `spec`. Returns the exit code when the command is done already (--help
// printed: kExitOk; usage error reported: kExitUsage), nullopt when it should run.
std::optional<int> ParseOrExit(const CommandSpec& spec, const std::vector<std::string>& argv,
                               ParsedCommand* parsed);

// A client of one leader: its own actor system, a blocking actor in the calling thread (never
// inside an actor), and the leader's coordinator handle. Each call goes through a
// LeaderCallActor, so a leader that goes away fails the call at once.
// The job token: the file of --token-file, else of $MUSTER_TOKEN_FILE; "" when neither is set.
absl::StatusOr<std::string> TokenFromFlags();

// Mutual TLS: the files of --tls-cert, --tls-key, --tls-ca, else of $MUSTER_TLS_*; checked.
// Possible errors: InvalidArgument, NotFound (CheckTlsFiles).
absl::StatusOr<TlsFiles> TlsFromFlags();

// Ends the process if the actor system of a LeaderSession does not shut down within a bound.
// CAF's shutdown waits until every connection has closed; a connection that cannot close (one
// the leader dropped while a large request was still being written) would hold the process
// forever. Past the bound it says so on stderr and exits with ExitCodeSoFar().
class ShutdownBound {
 public:
  ShutdownBound() = default;
  ShutdownBound(const ShutdownBound&) = delete;
  ShutdownBound& operator=(const ShutdownBound&) = delete;
  // Disarms the bound; waits for its thread.
  ~ShutdownBound();
  // Starts counting `bound` from now.
  void Arm(absl::Duration bound);

 private:
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::thread watchdog_;
};

class LeaderSession {
 public:
  // How long the session's actor system may take to shut down before the process exits.
  static constexpr absl::Duration kShutdownBound = absl::Seconds(5);

  // Connects within `timeout`, then presents the job token when there is one
  // (TokenFromFlags). Nothing listening at the address fails at once, unless `wait_for_leader`
  // (a leader expected to come: `muster run` joining, --wait-for-leader): then it retries until
  // `timeout`. A leader that closes the connection before its handshake fails it at once.
  // Possible errors: Unavailable ("nothing listening at HOST:PORT"; a refused handshake);
  // DeadlineExceeded naming the address, the attempts and the last error; Unauthenticated
  // (wrong token); NotFound, InvalidArgument (unreadable token or TLS file).
  static absl::StatusOr<std::unique_ptr<LeaderSession>> Connect(const LeaderAddress& address,
                                                                absl::Duration timeout,
                                                                bool wait_for_leader);
  // The same, waiting for the leader when --wait-for-leader was given.
  static absl::StatusOr<std::unique_ptr<LeaderSession>> Connect(const LeaderAddress& address,
                                                                absl::Duration timeout);

  // Shuts the actor system down, within kShutdownBound (ShutdownBound).
  ~LeaderSession();

  // Sends `args` to the coordinator and waits for the reply, at most `timeout`. Service errors
  // come back as they are; a request larger than the leader takes (MaxRequestBytesFlag) is
  // ResourceExhausted before anything is sent; no reply in time is DeadlineExceeded and a lost
  // leader Unavailable, both naming the leader.
  template <class Response, class... Args>
  absl::StatusOr<Response> Ask(absl::Duration timeout, Args... args) {
    return *Call<Response>(/*until_signal=*/false, timeout, std::move(args)...);
  }

  // Ask, unless a shutdown signal forwarded to self() (ShutdownSignalForwarder) comes first:
  // then the call is dropped and the answer is nullopt.
  template <class Response, class... Args>
  std::optional<absl::StatusOr<Response>> AskUntilSignal(absl::Duration timeout, Args... args) {
    return Call<Response>(/*until_signal=*/true, timeout, std::move(args)...);
  }

  caf::actor_system& system() { return system_; }
  caf::scoped_actor& self() { return self_; }
  const CoordinatorActor& leader() const { return leader_; }
  const LeaderAddress& address() const { return address_; }

 private:
  // Every call of the CLI to the leader: a LeaderCallActor makes it, and this thread waits for
  // its answer on self(); with `until_signal`, a shutdown signal drops it (nullopt).
  template <class Response, class... Args>
  std::optional<absl::StatusOr<Response>> Call(bool until_signal, absl::Duration timeout,
                                               Args... args) {
    const google::protobuf::Message* request = nullptr;
    size_t bytes = 0;
    (
        [&](const auto& arg) {
          if constexpr (std::is_base_of_v<google::protobuf::Message, std::decay_t<decltype(arg)>>) {
            if (request == nullptr) request = &arg;
            bytes += arg.ByteSizeLong();
          }
        }(args),
        ...);
    if (request != nullptr) {
      if (absl::Status size = CheckRequestSize(*request, bytes); !size.ok()) return size;
    }
    LeaderCallActor call = SpawnLeaderCall<Response>(
        system_, leader_, ToTimespan(timeout), caf::actor_cast<LeaderCallListener<Response>>(self_),
        std::move(args)...);
    // The call always answers: its request has a timeout and it watches the leader.
    std::optional<absl::StatusOr<Response>> result;
    auto answered = [&](Response& response) { result = std::move(response); };
    auto failed = [&](call_failed_atom, const caf::error& error) {
      result = Explain(CallStatus(error), timeout, bytes);
    };
    if (until_signal) {
      self_->receive(answered, failed,
                     [&](shutdown_atom, int) { caf::anon_send(call, cancel_atom::value); });
    } else {
      self_->receive(answered, failed);
    }
    return result;
  }

  LeaderSession(LeaderAddress address, const NodeOptions& node, size_t max_request_bytes);
  // The status of a failed call: the service's error as it is; no answer in time
  // DeadlineExceeded; any other transport error or exit (the leader's actor stopped or its node
  // went away) Unavailable.
  static absl::Status CallStatus(const caf::error& error);
  // Adds the leader's address to transport errors (those without a coordination payload), and
  // to the loss of the leader during a request of over 64 KiB (the least --max-frame-size)
  // that the request may have been over the leader's limit.
  absl::Status Explain(absl::Status status, absl::Duration timeout, size_t request_bytes = 0) const;
  // ResourceExhausted naming the request, its key, its size and the limit, for a request of
  // `bytes` over max_request_bytes_.
  absl::Status CheckRequestSize(const google::protobuf::Message& request, size_t bytes) const;

  ShutdownBound shutdown_bound_;  // first: it ends after everything else
  LeaderAddress address_;
  size_t max_request_bytes_ = 0;
  NodeConfig config_;
  caf::actor_system system_;
  caf::scoped_actor self_;
  CoordinatorActor leader_;
};

}  // namespace muster::cli
