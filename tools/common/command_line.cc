#include "muster/tools/common/command_line.h"

#include <algorithm>
#include <map>
#include <optional>

#include <absl/flags/commandlineflag.h>
#include <absl/flags/reflection.h>
#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_replace.h>
#include <absl/strings/strip.h>

namespace muster::cli {
namespace {

struct FlagToken {
  std::string name;  // '-' replaced by '_'
  std::optional<std::string> value;
};

// A flag set from the command line: the flag and the text to parse.
struct Assignment {
  absl::CommandLineFlag* flag;
  std::string value;
};

std::string Display(absl::string_view flag_name) {
  return absl::StrCat("--", absl::StrReplaceAll(flag_name, {{"_", "-"}}));
}

bool Contains(const std::vector<std::string>& names, absl::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool IsHelp(absl::string_view arg) { return arg == "--help" || arg == "-help" || arg == "-h"; }

// "--a-b=c" -> {"a_b", "c"}; nullopt for arguments that are not flags ("x", "-").
std::optional<FlagToken> SplitFlag(absl::string_view arg) {
  if (arg.size() < 2 || arg[0] != '-') return std::nullopt;
  arg.remove_prefix(arg[1] == '-' ? 2 : 1);
  FlagToken token;
  size_t equals = arg.find('=');
  token.name = absl::StrReplaceAll(arg.substr(0, equals), {{"-", "_"}});
  if (equals != absl::string_view::npos) token.value = std::string(arg.substr(equals + 1));
  return token;
}

absl::Status UnknownFlag(const CommandSpec& spec, absl::string_view arg) {
  return absl::InvalidArgumentError(
      absl::StrCat("unknown flag ", arg, " for `muster ", spec.name, "`"));
}

// The flag of `spec` that `token` names, and whether it was negated (--no-name).
absl::StatusOr<std::pair<absl::CommandLineFlag*, bool>> Resolve(const CommandSpec& spec,
                                                                FlagToken& token,
                                                                absl::string_view arg) {
  for (const auto& [alias, target] : spec.aliases) {
    if (token.name == alias) token.name = target;
  }
  if (Contains(spec.flags, token.name)) {
    if (absl::CommandLineFlag* flag = absl::FindCommandLineFlag(token.name)) return {{flag, false}};
  }
  absl::string_view base = token.name;
  if (absl::ConsumePrefix(&base, "no")) {
    absl::ConsumePrefix(&base, "_");
    if (Contains(spec.flags, base)) {
      absl::CommandLineFlag* flag = absl::FindCommandLineFlag(base);
      if (flag != nullptr && flag->IsOfType<bool>()) return {{flag, true}};
    }
  }
  return UnknownFlag(spec, arg);
}

// The text to parse for `flag`; may consume the next argument (the "--name value" form).
absl::StatusOr<std::string> FlagValue(const absl::CommandLineFlag& flag, bool negated,
                                      const FlagToken& token, const std::vector<std::string>& argv,
                                      size_t* index) {
  std::string name = Display(flag.Name());
  if (negated) {
    if (token.value)
      return absl::InvalidArgumentError(absl::StrCat(argv[*index], " takes no value"));
    return std::string("false");
  }
  if (token.value) return *token.value;
  if (flag.IsOfType<bool>()) return std::string("true");
  if (*index + 1 >= argv.size()) {
    return absl::InvalidArgumentError(absl::StrCat("flag ", name, " needs a value"));
  }
  return argv[++*index];
}

absl::Status Apply(const std::vector<Assignment>& assignments) {
  for (const Assignment& assignment : assignments) {
    std::string error;
    if (!assignment.flag->ParseFrom(assignment.value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat("bad value \"", assignment.value, "\" for ",
                                                     Display(assignment.flag->Name()), ": ",
                                                     error));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckArgCount(const CommandSpec& spec, size_t count) {
  int n = static_cast<int>(count);
  if (n >= spec.min_args && n <= spec.max_args) return absl::OkStatus();
  std::string expected = spec.min_args == spec.max_args
                             ? absl::StrCat(spec.min_args)
                             : absl::StrCat(spec.min_args, " to ", spec.max_args);
  return absl::InvalidArgumentError(absl::StrCat("expected ", expected, " argument(s), got ", n,
                                                 "; usage: muster ", spec.name, " ",
                                                 spec.synopsis));
}

}  // namespace

absl::StatusOr<ParsedCommand> ParseCommandLine(const CommandSpec& spec,
                                               const std::vector<std::string>& argv) {
  ParsedCommand parsed;
  auto end = std::find(argv.begin(), argv.end(), "--");
  if (std::any_of(argv.begin(), end, IsHelp)) {
    parsed.help = true;
    return parsed;
  }
  std::vector<Assignment> assignments;
  std::map<std::string, std::pair<absl::CommandLineFlag*, std::vector<std::string>>> repeated;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--") {
      parsed.args.insert(parsed.args.end(), argv.begin() + i + 1, argv.end());
      break;
    }
    std::optional<FlagToken> token = SplitFlag(argv[i]);
    if (!token) {
      parsed.args.push_back(argv[i]);
      continue;
    }
    auto resolved = Resolve(spec, *token, argv[i]);
    if (!resolved.ok()) return resolved.status();
    auto [flag, negated] = *resolved;
    absl::StatusOr<std::string> value = FlagValue(*flag, negated, *token, argv, &i);
    if (!value.ok()) return value.status();
    parsed.given.insert(std::string(flag->Name()));
    if (Contains(spec.repeated, flag->Name())) {
      auto& entry = repeated[std::string(flag->Name())];
      entry.first = flag;
      entry.second.push_back(*std::move(value));
    } else {
      assignments.push_back({flag, *std::move(value)});
    }
  }
  for (auto& [name, entry] : repeated) {
    assignments.push_back({entry.first, absl::StrJoin(entry.second, ",")});
  }
  if (absl::Status applied = Apply(assignments); !applied.ok()) return applied;
  if (absl::Status count = CheckArgCount(spec, parsed.args.size()); !count.ok()) return count;
  return parsed;
}

std::string HelpText(const CommandSpec& spec) {
  std::string text =
      absl::StrCat("usage: muster ", spec.name, " ", spec.synopsis, "\n\n", spec.summary, "\n");
  if (!spec.flags.empty()) absl::StrAppend(&text, "\nflags:\n");
  for (const std::string& name : spec.flags) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;
    std::string names = Display(name);
    for (const auto& [alias, target] : spec.aliases) {
      if (target == name) names = absl::StrCat("-", alias, ", ", names);
    }
    std::string fallback = flag->DefaultValue();
    if (!flag->IsOfType<bool>()) {
      absl::StrAppend(&names, " VALUE");
    } else if (fallback == "true") {
      names = Display(absl::StrCat("no_", name));  // on by default: the negated form matters
    }
    if (flag->IsOfType<bool>()) fallback.clear();
    absl::StrAppend(&text, "  ", names,
                    fallback.empty() ? "" : absl::StrCat("  (default: ", fallback, ")"), "\n      ",
                    flag->Help(), "\n");
  }
  return text;
}

}  // namespace muster::cli
