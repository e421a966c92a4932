#include "muster/tools/events/events_command.h"

#include <cstdio>
#include <optional>
#include <utility>

#include <absl/flags/declare.h>
#include <absl/flags/flag.h>
#include <absl/strings/escaping.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>
#include <absl/strings/str_join.h>

#include "muster/actors/observe/events/event_log.h"
#include "muster/messages/task_name.h"
#include "muster/net/process/shutdown_signals.h"
#include "muster/tools/common/cli_common.h"
#include "muster/tools/common/task_events.h"

ABSL_FLAG(bool, follow, false,
          "events: after the events kept, print each new one as it happens, until Ctrl-C (exit 0) "
          "or until the leader goes away (exit 1)");
ABSL_DECLARE_FLAG(bool, json);

namespace muster::cli {
namespace {

constexpr char kCommand[] = "events";
constexpr absl::Duration kDefaultTimeout = absl::Seconds(5);
// How long one call of --follow waits at the leader for the next event.
constexpr int64_t kFollowWaitMs = 10'000;

// `text` with its control characters C-escaped (UTF-8 and other bytes kept).
std::string OneLine(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      absl::StrAppend(&out, absl::CEscape(absl::string_view(&c, 1)));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string KindText(proto::JobEventKind kind) {
  const std::string& name = proto::JobEventKind_Name(kind);
  return name.empty() ? absl::StrCat("KIND_", static_cast<int>(kind)) : name;
}

// What the event is about: its task, or its barrier instance (and the task that opened it).
std::string Subject(const proto::JobEvent& event) {
  std::string subject;
  if (!event.barrier_id().empty()) {
    subject = absl::StrCat("barrier ", OneLine(event.barrier_id()), "::", event.barrier_counter());
    if (event.has_task()) absl::StrAppend(&subject, " (opened by ", TaskName(event.task()), ")");
  } else if (event.has_task()) {
    subject = TaskName(event.task());
  }
  return subject;
}

// Says on stderr which events the reader will not see: those the leader dropped before it
// read them (it keeps its last 4096).
void ReportLost(const proto::WatchEventsResponse& response, int64_t after) {
  if (response.first_kept_seq() <= after + 1 || response.events().empty()) return;
  const int64_t from = after + 1;
  const int64_t to = response.first_kept_seq() - 1;
  if (after == 0) {
    std::fprintf(stderr,
                 "muster events: events 1..%lld are no longer kept (the leader keeps its last "
                 "%zu)\n",
                 static_cast<long long>(to), kEventLogCapacity);
  } else {
    std::fprintf(stderr,
                 "muster events: lost %lld events (%lld..%lld): they came faster than they were "
                 "read (the leader keeps its last %zu)\n",
                 static_cast<long long>(to - from + 1), static_cast<long long>(from),
                 static_cast<long long>(to), kEventLogCapacity);
  }
}

void Print(const proto::WatchEventsResponse& response, bool json) {
  for (const proto::JobEvent& event : response.events()) {
    std::string line = json ? EventJson(event) : FormatEvent(event);
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
  }
  std::fflush(stdout);
}

// Prints the events kept, then (with `follow`) every new one, until a shutdown signal or a
// failure.
int Show(LeaderSession& session, absl::Duration timeout, bool follow, bool json) {
  std::optional<ShutdownSignalForwarder> forwarder;
  if (follow) forwarder.emplace(caf::actor_cast<caf::actor>(session.self()));
  int64_t after = 0;
  bool caught_up = false;
  while (true) {
    proto::WatchEventsRequest request;
    request.set_after_seq(after);
    request.set_max_events(kMaxWatchEvents);
    if (follow && caught_up) request.set_wait_ms(kFollowWaitMs);
    // A call of --follow waits at the leader too; a shutdown signal ends it.
    auto reply = session.AskUntilSignal<proto::WatchEventsResponse>(
        timeout + absl::Milliseconds(request.wait_ms()), request);
    if (!reply) return kExitOk;
    if (!reply->ok()) return ReportFailure(kCommand, reply->status());
    const proto::WatchEventsResponse& response = **reply;
    ReportLost(response, after);
    Print(response, json);
    if (!response.events().empty()) after = response.events().rbegin()->seq();
    caught_up = after >= response.last_seq();
    if (caught_up && !follow) return kExitOk;
  }
}

}  // namespace

std::string FormatEvent(const proto::JobEvent& event, absl::TimeZone zone) {
  std::vector<std::string> says;
  const bool task_event = event.kind() == proto::TASK_REGISTERED ||
                          event.kind() == proto::TASK_STATE_CHANGED ||
                          event.kind() == proto::TASK_FAILED;
  if (event.kind() == proto::TASK_STATE_CHANGED) says.push_back(StateName(event.state()));
  if (event.incarnation() != 0 && (task_event || event.kind() == proto::LEADER_STARTED)) {
    says.push_back(absl::StrCat("incarnation ", FormatIncarnation(event.incarnation())));
  }
  if (event.kind() == proto::ROUND_STARTED) says.push_back(absl::StrCat("round ", event.round()));
  if (event.error_code() != 0) {
    std::string code = absl::StatusCodeToString(static_cast<absl::StatusCode>(event.error_code()));
    says.push_back(absl::StrCat(code.empty() ? absl::StrCat(event.error_code()) : code, ": ",
                                OneLine(event.error_message())));
  }
  if (event.waiting_count() > 0) {
    std::vector<proto::CoordinatedTask> waiting(event.waiting_for().begin(),
                                                event.waiting_for().end());
    says.push_back(absl::StrCat("waiting for ", event.waiting_count(), ": ",
                                SummarizeTasks(waiting),
                                event.waiting_count() > event.waiting_for_size() ? ", ..." : ""));
  }
  if (!event.detail().empty()) says.push_back(OneLine(event.detail()));
  std::string line = absl::StrCat(
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3S%Ez", absl::FromUnixMillis(event.unix_ms()), zone), "  ",
      absl::StrFormat("%-18s", KindText(event.kind())));
  if (std::string subject = Subject(event); !subject.empty()) absl::StrAppend(&line, "  ", subject);
  if (!says.empty()) absl::StrAppend(&line, "  ", absl::StrJoin(says, "; "));
  return line;
}

const CommandSpec& EventsSpec() {
  static const CommandSpec spec{
      .name = "events",
      .synopsis = "--leader HOST:PORT [--follow] [--json] [--timeout 5s]",
      .summary =
          "Prints the job's events that the leader keeps (its last 4096), oldest first, one\n"
          "per line: time, kind, task or barrier, and what happened (state, error, who a\n"
          "barrier waited for). --json prints the JSON lines of `muster serve --events`.\n"
          "--follow then prints each new event as it happens, until Ctrl-C (exit 0) or until\n"
          "the leader goes away (exit 1). Events the leader dropped before they were read are\n"
          "named on stderr.",
      .flags = {"leader", "follow", "json", "timeout", "wait_for_leader", "token_file", "tls_cert",
                "tls_key", "tls_ca"},
  };
  return spec;
}

int RunEvents(const std::vector<std::string>& argv) {
  ParsedCommand parsed;
  if (auto done = ParseOrExit(EventsSpec(), argv, &parsed)) return *done;
  auto leader = LeaderFlag();
  if (!leader.ok()) return ReportLeaderFlagError(kCommand, leader.status());
  auto timeout = TimeoutFlag(kDefaultTimeout);
  if (!timeout.ok()) return ReportUsageError(kCommand, timeout.status());
  const bool follow = absl::GetFlag(FLAGS_follow);
  // Before the actor system starts its threads: they inherit the blocked signals.
  if (follow) BlockShutdownSignals();
  auto session = LeaderSession::Connect(*leader, *timeout);
  if (!session.ok()) return ReportFailure(kCommand, session.status());
  return Show(**session, *timeout, follow, absl::GetFlag(FLAGS_json));
}

}  // namespace muster::cli
