// What the client subcommands (status, kv) share: the --leader and --timeout flags, a session
// that connects to the leader within a deadline (never a blocking remote_actor) and asks it
// bounded questions from the calling thread, and how failures and usage errors are reported.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <absl/flags/declare.h>
#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>
#include <absl/time/time.h>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/messages/interfaces.h"
#include "muster/messages/status_codec.h"
#include "muster/net/transport/node_config.h"
#include "muster/tools/command_line.h"
#include "muster/tools/leader_call_actor.h"

ABSL_DECLARE_FLAG(std::string, leader);
ABSL_DECLARE_FLAG(std::optional<absl::Duration>, timeout);

namespace muster::cli {

struct LeaderAddress {
  std::string host;
  uint16_t port = 0;
  std::string ToString() const;
};

// Parses "HOST:PORT" (port 1-65535).
// Possible errors: InvalidArgument naming the text and the expected form.
absl::StatusOr<LeaderAddress> ParseLeaderAddress(absl::string_view text);

// The --leader flag, parsed. Possible errors: InvalidArgument (missing or malformed).
absl::StatusOr<LeaderAddress> LeaderFlag();

// The --timeout flag, or `fallback` when it is not given.
// Possible errors: InvalidArgument (zero or negative).
absl::StatusOr<absl::Duration> TimeoutFlag(absl::Duration fallback);

caf::timespan ToTimespan(absl::Duration duration);

// Prints "muster <command>: <CODE>: <message>" to stderr; returns kExitFailed.
int ReportFailure(absl::string_view command, const absl::Status& status);

// Prints "muster <command>: <message>" and a pointer to --help to stderr; returns kExitUsage.
int ReportUsageError(absl::string_view command, const absl::Status& status);

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

class LeaderSession {
 public:
  // Connects within `timeout` (retrying while the leader is not up yet), then presents the job
  // token when there is one (TokenFromFlags).
  // Possible errors: DeadlineExceeded naming the address, the attempts and the last error;
  // Unauthenticated (wrong token); NotFound, InvalidArgument (unreadable token or TLS file).
  static absl::StatusOr<std::unique_ptr<LeaderSession>> Connect(const LeaderAddress& address,
                                                                absl::Duration timeout);

  // Sends `args` to the coordinator and waits for the reply, at most `timeout`. Service errors
  // come back as they are; no reply in time is DeadlineExceeded and a lost leader Unavailable,
  // both naming the leader.
  template <class Response, class... Args>
  absl::StatusOr<Response> Ask(absl::Duration timeout, Args... args) {
    SpawnLeaderCall<Response>(system_, leader_, ToTimespan(timeout),
                              caf::actor_cast<LeaderCallListener<Response>>(self_),
                              std::move(args)...);
    // The call always answers: its request has a timeout and it watches the leader.
    absl::StatusOr<Response> result = absl::InternalError("no reply");
    self_->receive([&](Response& response) { result = std::move(response); },
                   [&](call_failed_atom, const caf::error& error) {
                     result = Explain(ToStatus(error), timeout);
                   });
    return result;
  }

  caf::actor_system& system() { return system_; }
  caf::scoped_actor& self() { return self_; }
  const CoordinatorActor& leader() const { return leader_; }
  const LeaderAddress& address() const { return address_; }

 private:
  LeaderSession(LeaderAddress address, const NodeOptions& node);
  // Adds the leader's address to transport errors (those without a coordination payload).
  absl::Status Explain(absl::Status status, absl::Duration timeout) const;

  LeaderAddress address_;
  NodeConfig config_;
  caf::actor_system system_;
  caf::scoped_actor self_;
  CoordinatorActor leader_;
};

}  // namespace muster::cli
