// The command line of the muster command: each subcommand names the Abseil flags it accepts
// (ABSL_FLAG definitions: typed, with help text and defaults; Abseil parses every value), and
// ParseCommandLine walks the subcommand's arguments. absl::ParseCommandLine itself cannot serve
// a command with subcommands: it exits with status 1 on bad input and on --help (muster exits 2
// and 0), accepts every flag of the binary everywhere, and lets a repeated flag replace its
// earlier value.
//
// Accepted forms: --name=value, --name value, -name=value, -name value; for boolean flags
// --name, --name=true|false, --noname and --no-name. Names may be written with '-' or '_'
// (--heartbeat-timeout is the flag heartbeat_timeout). Flags a spec lists as repeated
// accumulate: "--job worker=4 --job ps=2" means "--job=worker=4,ps=2". Other flags given twice
// keep the last value, as in Abseil. "--" ends the flags; a lone "-" is an argument.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <absl/status/statusor.h>

namespace muster::cli {

// What the muster command exits with.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailed = 1,  // the request failed, the leader could not be reached
  kExitUsage = 2,   // bad command line
};

struct CommandSpec {
  std::string name;      // "kv get"
  std::string synopsis;  // "--leader HOST:PORT [--timeout D] KEY"
  std::string summary;   // one paragraph for --help
  // The Abseil flags accepted, by flag name (underscores).
  std::vector<std::string> flags = {};
  // Flags whose occurrences accumulate into one comma-separated list.
  std::vector<std::string> repeated = {};
  // Single-letter aliases: {"r", "recursive"} makes -r mean --recursive.
  std::vector<std::pair<std::string, std::string>> aliases = {};
  // How many positional arguments the command takes.
  int min_args = 0;
  int max_args = 0;
};

struct ParsedCommand {
  std::vector<std::string> args;  // positional arguments
  bool help = false;              // --help or -h was given: print HelpText and exit 0
  std::set<std::string> given;    // the flags set on the command line (their names)
};

// Sets the flags of `spec` from `argv` (the arguments after the subcommand's name) and returns
// the positional arguments.
// Possible errors: InvalidArgument naming the flag or argument at fault and what is expected
// (unknown flag, flag of another subcommand, missing or bad value, wrong number of arguments).
absl::StatusOr<ParsedCommand> ParseCommandLine(const CommandSpec& spec,
                                               const std::vector<std::string>& argv);

// The --help text of `spec`: usage, summary and every flag with its help and default.
std::string HelpText(const CommandSpec& spec);

}  // namespace muster::cli
