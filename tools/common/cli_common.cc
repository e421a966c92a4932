#include "muster/tools/common/cli_common.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <absl/flags/flag.h>
#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/strings/strip.h>
#include <absl/time/clock.h>
#include <caf/send.hpp>

#include "muster/messages/status/caf_text.h"
#include "muster/messages/task_name.h"
#include "muster/net/agent/session/etcd/etcd_security.h"
#include "muster/net/agent/session/etcd/ha_leader_registry.h"
#include "muster/net/agent/session/leader_addresses.h"
#include "muster/net/agent/session/leader_session_actor.h"
#include "muster/net/leader/auth/job_token.h"
#include "muster/net/leader/standby_leader.h"
#include "muster/net/transport/wire/frame_guard.h"

ABSL_FLAG(std::string, leader, "",
          "The leader's address, HOST:PORT (as printed by muster serve); an HA job's leaders, "
          "HOST:PORT,HOST:PORT, or etcd://ETCD:2379[,ETCD:2379...]/HA-NAME to read them from "
          "etcd");
ABSL_FLAG(std::string, token_file, "",
          "A file holding the job token (serve: require it from every other node; other "
          "commands: present it). Default: the file named by $MUSTER_TOKEN_FILE, if set");
ABSL_FLAG(std::string, tls_cert, "",
          "Mutual TLS: this node's certificate (PEM). With --tls-key and --tls-ca; default: "
          "$MUSTER_TLS_CERT");
ABSL_FLAG(std::string, tls_key, "",
          "Mutual TLS: the certificate's private key (PEM). Default: $MUSTER_TLS_KEY");
ABSL_FLAG(std::string, tls_ca, "",
          "Mutual TLS: the job's CA certificate (PEM); peers must hold a certificate it signed. "
          "Default: $MUSTER_TLS_CA");
ABSL_FLAG(std::optional<absl::Duration>, timeout, std::nullopt,
          "Give up after this long, e.g. 500ms, 5s, 1m: connecting to the leader and each "
          "request (status: 5s; kv: 10s; kv get --wait: how long to wait for the key)");
ABSL_FLAG(bool, wait_for_leader, false,
          "When nothing listens at --leader, wait (at most --timeout) for a leader that is "
          "still starting instead of failing at once with UNAVAILABLE");

namespace muster::cli {
namespace {

// Set by ReportFailure: the exit code of a process whose shutdown is cut short.
std::atomic<bool> failure_reported{false};

// The least --max-frame-size a leader takes.
constexpr size_t kLeastMaxFrameBytes = 64 << 10;

}  // namespace

std::string LeaderAddress::ToString() const { return absl::StrCat(host, ":", port); }

std::string LeaderAddress::List() const {
  std::string list = ToString();
  for (const std::string& other : others) absl::StrAppend(&list, ",", other);
  return list;
}

absl::StatusOr<LeaderAddress> ParseLeaderAddress(absl::string_view text) {
  if (absl::StrContains(text, ',')) {
    std::vector<std::string> parts = SplitLeaderList(text);
    if (parts.empty()) return ParseLeaderAddress("");
    absl::StatusOr<LeaderAddress> first = ParseLeaderAddress(parts[0]);
    if (!first.ok()) return first.status();
    for (size_t i = 1; i < parts.size(); ++i) {
      if (absl::Status other = ParseLeaderAddress(parts[i]).status(); !other.ok()) return other;
      first->others.push_back(parts[i]);
    }
    return first;
  }
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("bad leader address \"", text, "\": ", why,
                                                   "; expected HOST:PORT, e.g. 127.0.0.1:7400"));
  };
  size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos) return bad("no ':'");
  absl::string_view host = text.substr(0, colon);
  if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");  // [::1]:7400
  if (host.empty()) return bad("no host");
  int port = 0;
  if (!absl::SimpleAtoi(text.substr(colon + 1), &port) || port <= 0 || port > 65535) {
    return bad("the port must be a number from 1 to 65535");
  }
  return LeaderAddress{std::string(host), static_cast<uint16_t>(port)};
}

absl::StatusOr<LeaderAddress> LeaderFlag() {
  return LeaderFlag(absl::GetFlag(FLAGS_wait_for_leader), absl::Seconds(5));
}

absl::StatusOr<LeaderAddress> LeaderFlag(bool wait_for_leader, absl::Duration default_timeout) {
  std::string text = absl::GetFlag(FLAGS_leader);
  if (text.empty()) {
    return absl::InvalidArgumentError(
        "--leader HOST:PORT is required: the address muster serve printed");
  }
  if (absl::StartsWith(text, kEtcdLeaderScheme)) {
    // An HA job's leaders, read from etcd: the session then follows the active one, and reads
    // them again when none of them takes it.
    absl::StatusOr<absl::Duration> timeout = TimeoutFlag(default_timeout);
    if (!timeout.ok()) return timeout.status();
    // Waiting for the leader, none registered yet (or etcd not up yet) is asked again until
    // --timeout.
    absl::StatusOr<std::vector<std::string>> leaders =
        AwaitHaLeaders(text, *timeout, wait_for_leader);
    if (!leaders.ok()) return leaders.status();
    absl::StatusOr<LeaderAddress> address = ParseLeaderAddress(absl::StrJoin(*leaders, ","));
    if (address.ok()) address->registry = text;
    return address;
  }
  return ParseLeaderAddress(text);
}

absl::StatusOr<absl::Duration> TimeoutFlag(absl::Duration fallback) {
  std::optional<absl::Duration> timeout = absl::GetFlag(FLAGS_timeout);
  if (!timeout) return fallback;
  if (*timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--timeout must be positive, got ", absl::FormatDuration(*timeout)));
  }
  return *timeout;
}

caf::timespan ToTimespan(absl::Duration duration) {
  return std::chrono::duration_cast<caf::timespan>(absl::ToChronoNanoseconds(duration));
}

absl::StatusOr<size_t> MaxRequestBytesFlag() {
  int64_t frame = absl::GetFlag(FLAGS_max_frame_size);
  if (frame < 0 || frame > int64_t{1} << 31) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-frame-size must be from 0 (no limit) to 2 GiB, got ", frame));
  }
  size_t bytes = static_cast<size_t>(frame);
  return bytes > kFrameEnvelopeBytes ? bytes - kFrameEnvelopeBytes : bytes;
}

int ExitCodeSoFar() { return failure_reported.load() ? kExitFailed : kExitOk; }

int ReportFailure(absl::string_view command, const absl::Status& status) {
  failure_reported.store(true);
  std::fflush(stdout);
  std::fprintf(stderr, "muster %s: %s: %s\n", std::string(command).c_str(),
               absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return kExitFailed;
}

int ReportUsageError(absl::string_view command, const absl::Status& status) {
  std::fprintf(stderr, "muster %s: %s\nRun `muster %s --help` for usage.\n",
               std::string(command).c_str(), std::string(status.message()).c_str(),
               std::string(command).c_str());
  return kExitUsage;
}

int ReportLeaderFlagError(absl::string_view command, const absl::Status& status) {
  return absl::IsInvalidArgument(status) ? ReportUsageError(command, status)
                                         : ReportFailure(command, status);
}

std::optional<int> ParseOrExit(const CommandSpec& spec, const std::vector<std::string>& argv,
                               ParsedCommand* parsed) {
  absl::StatusOr<ParsedCommand> result = ParseCommandLine(spec, argv);
  if (!result.ok()) return ReportUsageError(spec.name, result.status());
  if (result->help) {
    std::fputs(HelpText(spec).c_str(), stdout);
    return kExitOk;
  }
  *parsed = *std::move(result);
  return std::nullopt;
}

absl::StatusOr<TlsFiles> TlsFromFlags() {
  TlsFiles files{.cert = absl::GetFlag(FLAGS_tls_cert),
                 .key = absl::GetFlag(FLAGS_tls_key),
                 .ca = absl::GetFlag(FLAGS_tls_ca)};
  if (!files.enabled()) files = TlsFilesFromEnvironment();
  if (absl::Status check = CheckTlsFiles(files); !check.ok()) return check;
  return files;
}

ShutdownBound::~ShutdownBound() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  done_changed_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void ShutdownBound::Arm(absl::Duration bound) {
  if (watchdog_.joinable()) return;
  watchdog_ = std::thread([this, bound] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (done_changed_.wait_for(lock, absl::ToChronoNanoseconds(bound), [this] { return done_; })) {
      return;
    }
    std::fflush(stdout);
    std::fprintf(stderr,
                 "muster: the connection to the leader did not close within %s; exiting "
                 "without waiting for it\n",
                 absl::FormatDuration(bound).c_str());
    std::fflush(stderr);
    std::_Exit(ExitCodeSoFar());
  });
}

LeaderSession::LeaderSession(LeaderAddress address, const NodeOptions& node,
                             size_t max_request_bytes)
    : address_(std::move(address)),
      max_request_bytes_(max_request_bytes),
      config_(node),
      system_(config_),
      self_(system_) {}

LeaderSession::~LeaderSession() { shutdown_bound_.Arm(kShutdownBound); }

absl::StatusOr<std::unique_ptr<LeaderSession>> LeaderSession::Connect(const LeaderAddress& address,
                                                                      absl::Duration timeout) {
  return Connect(address, timeout, absl::GetFlag(FLAGS_wait_for_leader));
}

absl::StatusOr<std::unique_ptr<LeaderSession>> LeaderSession::Connect(const LeaderAddress& address,
                                                                      absl::Duration timeout,
                                                                      bool wait_for_leader) {
  auto tls = TlsFromFlags();
  if (!tls.ok()) return tls.status();
  auto max_request_bytes = MaxRequestBytesFlag();
  if (!max_request_bytes.ok()) return max_request_bytes.status();
  NodeOptions node;
  node.tls = *std::move(tls);
  std::unique_ptr<LeaderSession> session(new LeaderSession(address, node, *max_request_bytes));
  // An unreadable token file is reported once the leader was reached, as a refused token is.
  auto token = TokenFromFlags();
  LeaderSessionOptions options{.connect = {.host = address.host,
                                           .port = address.port,
                                           .timeout = ToTimespan(timeout),
                                           .wait_for_leader = wait_for_leader,
                                           .other_leaders = address.others,
                                           .registry = address.registry,
                                           .registry_security = RegistrySecurity(address.registry)},
                               .token = token.ok() ? *token : std::string(),
                               .authenticate_timeout = ToTimespan(timeout)};
  // The session answers within twice `timeout` (connecting, then the token); the margin only
  // guards against a lost reply. It presents the token as itself and lives as long as the
  // session's own actor: the leader admits this node while it lives.
  LeaderSessionReply reply =
      OpenLeaderSession(session->self_, std::move(options),
                        caf::duration{ToTimespan(timeout * 2 + absl::Seconds(5))});
  if (!reply.status.ok()) {
    if (reply.failed_in == SessionState::kAuthenticating) {
      return session->Explain(reply.status, timeout);
    }
    return reply.status;
  }
  if (!token.ok()) return token.status();
  session->leader_ = std::move(reply.leader);
  return session;
}

absl::StatusOr<std::string> TokenFromFlags() {
  std::string path = absl::GetFlag(FLAGS_token_file);
  if (path.empty()) return TokenFromEnvironment();
  auto token = ReadTokenFile(path);
  if (!token.ok()) {
    return absl::Status(token.status().code(),
                        absl::StrCat("--token-file: ", token.status().message()));
  }
  return token;
}

absl::Status LeaderSession::CheckRequestSize(const google::protobuf::Message& request,
                                             size_t bytes) const {
  if (max_request_bytes_ == 0 || bytes <= max_request_bytes_) return absl::OkStatus();
  std::string what = request.GetDescriptor()->name();
  if (const auto* insert = dynamic_cast<const proto::InsertKeyValueRequest*>(&request)) {
    absl::StrAppend(&what, " of key ", WireTextForMessage(insert->kv().key()));
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      what, " is ", bytes, " bytes; the leader at ", address_.ToString(),
      " accepts requests of at most ", max_request_bytes_, " bytes (its --max-frame-size of ",
      max_request_bytes_ + kFrameEnvelopeBytes,
      " less 4 KiB): nothing was sent. Store a smaller value, or, if the leader runs with a "
      "larger --max-frame-size, give this command the same --max-frame-size"));
}

absl::Status LeaderSession::CallStatus(const caf::error& error) {
  if (error.category() == kStatusCategory) return ToStatus(error);
  if (error == caf::sec::request_timeout)
    return absl::DeadlineExceededError(DescribeCafError(error));
  return absl::UnavailableError(DescribeCafError(error));
}

absl::Status LeaderSession::Explain(absl::Status status, absl::Duration timeout,
                                    size_t request_bytes) const {
  if (GetCoordinationError(status).has_value()) return status;
  if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::DeadlineExceededError(absl::StrCat(
        "no answer from the leader at ", address_.ToString(), " within ",
        absl::FormatDuration(timeout), " (", status.message(), "); is it still running?"));
  }
  // A standby of an HA job answered: its own words name the active leader and what to do (and
  // its payload names it for ProbeLeaders); the leader is not lost.
  if (StandbyActiveLeader(status)) return status;
  if (status.code() == absl::StatusCode::kUnavailable) {
    std::string hint;
    if (request_bytes + kFrameEnvelopeBytes > kLeastMaxFrameBytes) {
      hint = absl::StrCat(
          " The request was ", request_bytes,
          " bytes: a leader closes the connection of a request over its --max-frame-size; if "
          "the leader's is smaller than this command's (",
          max_request_bytes_ == 0 ? "no limit"
                                  : absl::StrCat(max_request_bytes_ + kFrameEnvelopeBytes),
          "), give this command the leader's --max-frame-size to have it checked here.");
    }
    return absl::UnavailableError(absl::StrCat("lost the leader at ", address_.ToString(), " (",
                                               status.message(), "); is it still running?", hint));
  }
  return status;
}

}  // namespace muster::cli
