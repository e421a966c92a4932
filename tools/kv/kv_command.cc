#include "muster/tools/kv/kv_command.h"

#include <cstdio>
#include <map>

#include <absl/flags/flag.h>
#include <absl/strings/escaping.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/strip.h>
#include <caf/send.hpp>

#include "muster/messages/requests/kv_requests.h"
#include "muster/messages/status/caf_text.h"
#include "muster/net/process/shutdown_signals.h"
#include "muster/tools/common/cli_common.h"
#include "muster/tools/kv/kv_watcher_actor.h"

ABSL_FLAG(bool, wait, false,
          "kv get: wait until the key exists (at most --timeout) instead of failing with "
          "NOT_FOUND");
ABSL_FLAG(bool, overwrite, true,
          "kv put: replace an existing value (--no-overwrite: fail with ALREADY_EXISTS instead)");
ABSL_FLAG(bool, recursive, false, "kv rm: delete KEY and every key under KEY/");
ABSL_FLAG(bool, all, false, "kv rm: confirms `rm -r /`, which deletes every key of the store");
ABSL_FLAG(int64_t, count, 0, "kv watch: exit 0 after this many events (0: until Ctrl-C)");

namespace muster::cli {
namespace {

constexpr absl::Duration kDefaultTimeout = absl::Seconds(10);

CommandSpec Verb(std::string verb, std::string synopsis, std::string summary,
                 std::vector<std::string> extra_flags, int min_args, int max_args) {
  CommandSpec spec{.name = "kv " + verb,
                   .synopsis = std::move(synopsis),
                   .summary = std::move(summary),
                   .flags = {"leader", "timeout", "wait_for_leader", "token_file", "tls_cert",
                             "tls_key", "tls_ca"},
                   .min_args = min_args,
                   .max_args = max_args};
  spec.flags.insert(spec.flags.end(), extra_flags.begin(), extra_flags.end());
  if (verb == "rm") spec.aliases = {{"r", "recursive"}};
  return spec;
}

const std::map<std::string, CommandSpec>& KvSpecs() {
  static const auto* specs = new std::map<std::string, CommandSpec>{
      {"get", Verb("get", "--leader HOST:PORT [--wait] [--timeout 10s] KEY",
                   "Prints the value of KEY as it is stored. Exits 1 with NOT_FOUND when KEY does\n"
                   "not exist; with --wait, waits until it does (DEADLINE_EXCEEDED after\n"
                   "--timeout).",
                   {"wait"}, 1, 1)},
      {"put",
       Verb("put", "--leader HOST:PORT [--no-overwrite] [--max-frame-size N] KEY VALUE",
            "Sets KEY to VALUE, replacing an existing value unless --no-overwrite is given.\n"
            "A request over the leader's --max-frame-size (less 4 KiB) is refused with\n"
            "RESOURCE_EXHAUSTED before anything is sent: give this command the leader's\n"
            "--max-frame-size when it was started with another than the default.",
            {"overwrite", "max_frame_size"}, 2, 2)},
      {"ls", Verb("ls", "--leader HOST:PORT [DIRECTORY]",
                  "Lists every key under DIRECTORY (the whole store without it), one\n"
                  "\"KEY<TAB>VALUE\" line each in key order; keys and values with C escapes.",
                  {}, 0, 1)},
      {"rm",
       Verb("rm", "--leader HOST:PORT [-r] [--all] KEY",
            "Deletes KEY; with -r also every key under KEY/. Deleting a missing key is fine.\n"
            "Without -r, a KEY that only has keys under it (a directory) is refused with\n"
            "FAILED_PRECONDITION and nothing is deleted. Deleting the whole store (-r /) also\n"
            "needs --all.",
            {"recursive", "all"}, 1, 1)},
      {"watch", Verb("watch", "--leader HOST:PORT [--count N] KEY",
                     "Prints every change of KEY, or of the keys under KEY/ when it is a\n"
                     "directory, one line each: KIND KEY revision=R [value=V]. Runs until\n"
                     "Ctrl-C, or until --count events were printed.",
                     {"count"}, 1, 1)},
  };
  return *specs;
}

constexpr char kKvHelp[] =
    "usage: muster kv get|put|ls|rm|watch --leader HOST:PORT [flags] ARGS\n\n"
    "The key-value store of a running leader:\n"
    "  get KEY          print the value (--wait: wait for the key)\n"
    "  put KEY VALUE    set a value (--no-overwrite: refuse to replace)\n"
    "  ls [DIRECTORY]   list keys and values\n"
    "  rm [-r] KEY      delete a key (-r: and everything under it)\n"
    "  watch KEY        print changes until Ctrl-C or --count N\n\n"
    "Run `muster kv VERB --help` for the flags of a verb.\n";

void PrintEntries(const proto::GetKeyValueDirResponse& listing) {
  for (const auto& entry : listing.kv()) {
    std::printf("%s\t%s\n", absl::CHexEscape(entry.key()).c_str(),
                absl::CHexEscape(entry.value()).c_str());
  }
}

int Get(LeaderSession& session, absl::Duration timeout, const std::string& key) {
  absl::StatusOr<proto::KeyValueEntry> entry;
  if (absl::GetFlag(FLAGS_wait)) {
    std::fprintf(stderr, "waiting for %s (at most %s)\n", key.c_str(),
                 absl::FormatDuration(timeout).c_str());
    // The leader answers DEADLINE_EXCEEDED at `timeout`; the margin lets that answer arrive.
    auto reply = session.Ask<proto::GetKeyValueResponse>(timeout + absl::Seconds(5),
                                                         requests::GetKeyValue(key, timeout));
    entry = reply.ok() ? absl::StatusOr<proto::KeyValueEntry>(reply->kv()) : reply.status();
  } else {
    auto reply = session.Ask<proto::TryGetKeyValueResponse>(timeout, requests::TryGetKeyValue(key));
    entry = reply.ok() ? absl::StatusOr<proto::KeyValueEntry>(reply->kv()) : reply.status();
  }
  if (!entry.ok()) return ReportFailure("kv get", entry.status());
  std::fwrite(entry->value().data(), 1, entry->value().size(), stdout);
  std::fputc('\n', stdout);
  return kExitOk;
}

int Put(LeaderSession& session, absl::Duration timeout, const std::vector<std::string>& args) {
  auto reply = session.Ask<proto::InsertKeyValueResponse>(
      timeout, requests::InsertKeyValue(args[0], args[1], absl::GetFlag(FLAGS_overwrite)));
  return reply.ok() ? kExitOk : ReportFailure("kv put", reply.status());
}

int List(LeaderSession& session, absl::Duration timeout, const std::vector<std::string>& args) {
  auto reply = session.Ask<proto::GetKeyValueDirResponse>(
      timeout, requests::GetKeyValueDir(args.empty() ? "" : args[0]));
  if (!reply.ok()) return ReportFailure("kv ls", reply.status());
  PrintEntries(*reply);
  return kExitOk;
}

// Without -r a key that does not exist but has keys under it is a directory the delete would
// leave as it is: FailedPrecondition saying so, before anything is deleted.
absl::Status RefuseDirectory(LeaderSession& session, absl::Duration timeout,
                             const std::string& key) {
  auto value = session.Ask<proto::TryGetKeyValueResponse>(timeout, requests::TryGetKeyValue(key));
  // A key that exists is deleted; any other error is the delete's to report.
  if (!absl::IsNotFound(value.status())) return absl::OkStatus();
  auto listing = session.Ask<proto::GetKeyValueDirResponse>(timeout, requests::GetKeyValueDir(key));
  if (!listing.ok()) return listing.status();
  if (listing->kv_size() == 0) return absl::OkStatus();  // a missing key: deleting it is fine
  std::string directory(absl::StripSuffix(key, "/"));
  return absl::FailedPreconditionError(
      absl::StrCat(directory, " is a directory (", listing->kv_size(),
                   listing->kv_size() == 1 ? " key" : " keys", " under ", directory,
                   "/); nothing was deleted: use -r to delete it and every key under it"));
}

int Remove(LeaderSession& session, absl::Duration timeout, const std::string& key) {
  if (!absl::GetFlag(FLAGS_recursive)) {
    if (absl::Status refused = RefuseDirectory(session, timeout, key); !refused.ok()) {
      return ReportFailure("kv rm", refused);
    }
  }
  auto reply = session.Ask<proto::DeleteKeyValueResponse>(
      timeout,
      requests::DeleteKeyValue(key, absl::GetFlag(FLAGS_recursive), absl::GetFlag(FLAGS_all)));
  return reply.ok() ? kExitOk : ReportFailure("kv rm", reply.status());
}

// Waits until the printer printed --count events, a shutdown signal arrives, or the leader is
// lost (kExitFailed).
int AwaitWatchEnd(LeaderSession& session) {
  caf::scoped_actor& self = session.self();
  self->monitor(session.leader());
  ShutdownSignalForwarder forwarder{caf::actor_cast<caf::actor>(self)};
  bool running = true;
  int code = kExitOk;
  self->receive_while(running)(
      [&](watch_done_atom) { running = false; }, [&](shutdown_atom, int) { running = false; },
      [&](caf::down_msg& down) {
        code = ReportFailure("kv watch", absl::UnavailableError(absl::StrCat(
                                             "lost the leader at ", session.address().ToString(),
                                             " (", DescribeCafError(down.reason), ")")));
        running = false;
      });
  return code;
}

int Watch(LeaderSession& session, absl::Duration timeout, const std::string& key) {
  KvWatcherActor printer = SpawnKvPrinter(session.system(), absl::GetFlag(FLAGS_count),
                                          caf::actor_cast<KvPrinterListener>(session.self()));
  auto reply = session.Ask<proto::WatchKeyResponse>(timeout, requests::WatchKey(key), printer);
  if (!reply.ok()) {
    caf::anon_send_exit(printer, caf::exit_reason::user_shutdown);
    return ReportFailure("kv watch", reply.status());
  }
  std::fprintf(stderr, "watching %s from revision %lld; Ctrl-C stops\n", key.c_str(),
               static_cast<long long>(reply->revision()));
  int code = AwaitWatchEnd(session);
  if (code == kExitOk) {
    // Best effort: the leader also drops the watch once this process is gone.
    (void)session.Ask<proto::StopWatchKeyResponse>(timeout, requests::StopWatchKey(key), printer);
  }
  caf::anon_send_exit(printer, caf::exit_reason::user_shutdown);
  return code;
}

int RunVerb(const CommandSpec& spec, const ParsedCommand& parsed) {
  auto leader = LeaderFlag();
  if (!leader.ok()) return ReportLeaderFlagError(spec.name, leader.status());
  auto timeout = TimeoutFlag(kDefaultTimeout);
  if (!timeout.ok()) return ReportUsageError(spec.name, timeout.status());
  if (absl::GetFlag(FLAGS_count) < 0) {
    return ReportUsageError(spec.name, absl::InvalidArgumentError("--count may not be negative"));
  }
  if (auto frame = MaxRequestBytesFlag(); !frame.ok()) {
    return ReportUsageError(spec.name, frame.status());
  }
  const bool watch = spec.name == "kv watch";
  // Before the actor system starts its threads: they inherit the blocked signals.
  if (watch) BlockShutdownSignals();
  auto session = LeaderSession::Connect(*leader, *timeout);
  if (!session.ok()) return ReportFailure(spec.name, session.status());
  const std::vector<std::string>& args = parsed.args;
  if (spec.name == "kv get") return Get(**session, *timeout, args[0]);
  if (spec.name == "kv put") return Put(**session, *timeout, args);
  if (spec.name == "kv ls") return List(**session, *timeout, args);
  if (spec.name == "kv rm") return Remove(**session, *timeout, args[0]);
  return Watch(**session, *timeout, args[0]);
}

}  // namespace

const CommandSpec* KvSpec(const std::string& verb) {
  auto it = KvSpecs().find(verb);
  return it == KvSpecs().end() ? nullptr : &it->second;
}

int RunKv(const std::vector<std::string>& argv) {
  if (argv.empty()) {
    std::fputs(kKvHelp, stderr);
    return kExitUsage;
  }
  const std::string& verb = argv[0];
  if (verb == "--help" || verb == "-h" || verb == "help") {
    std::fputs(kKvHelp, stdout);
    return kExitOk;
  }
  const CommandSpec* spec = KvSpec(verb);
  if (spec == nullptr) {
    return ReportUsageError(
        "kv", absl::InvalidArgumentError(
                  absl::StrCat("unknown verb \"", verb, "\"; expected get, put, ls, rm or watch")));
  }
  ParsedCommand parsed;
  std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (auto done = ParseOrExit(*spec, rest, &parsed)) return *done;
  return RunVerb(*spec, parsed);
}

}  // namespace muster::cli
