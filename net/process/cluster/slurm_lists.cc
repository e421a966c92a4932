// Slurm's compressed lists: host lists ("node[01-03,07]") and tasks per node ("2(x3),1").
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>

#include "muster/net/process/cluster/cluster_environment.h"

namespace muster {
namespace {

absl::Status BadList(absl::string_view list, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("the Slurm list \"", list.substr(0, 200), "\" is malformed: ", why));
}

// Splits at the commas outside brackets.
absl::StatusOr<std::vector<absl::string_view>> TopLevelParts(absl::string_view list) {
  std::vector<absl::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '[') {
      if (++depth > 1) return BadList(list, "nested brackets");
    } else if (c == ']') {
      if (--depth < 0) return BadList(list, "a ']' without '['");
    } else if (c == ',' && depth == 0) {
      if (i > start) parts.push_back(list.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) return BadList(list, "a '[' without ']'");
  return parts;
}

// One part "prefix[ranges]suffix" (or a plain name) appended to `hosts`.
absl::Status ExpandPart(absl::string_view list, absl::string_view part, size_t limit,
                        std::vector<std::string>* hosts) {
  size_t open = part.find('[');
  if (open == absl::string_view::npos) {
    if (hosts->size() >= limit) return BadList(list, absl::StrCat("more than ", limit, " hosts"));
    hosts->emplace_back(part);
    return absl::OkStatus();
  }
  size_t close = part.find(']', open);
  absl::string_view prefix = part.substr(0, open);
  absl::string_view ranges = part.substr(open + 1, close - open - 1);
  absl::string_view suffix = part.substr(close + 1);
  if (suffix.find('[') != absl::string_view::npos) {
    return BadList(list, "more than one bracket in a host name");
  }
  for (absl::string_view range : absl::StrSplit(ranges, ',')) {
    std::vector<absl::string_view> ends = absl::StrSplit(range, '-');
    uint64_t first = 0, last = 0;
    if (ends.size() > 2 || ends[0].empty() || !absl::SimpleAtoi(ends[0], &first) ||
        !absl::SimpleAtoi(ends.back(), &last) || last < first) {
      return BadList(list, absl::StrCat("\"", range, "\" is not a number or range"));
    }
    const size_t width = ends[0].size();  // "01-10" keeps its zero padding
    if (last - first >= limit || hosts->size() + (last - first) >= limit) {
      return BadList(list, absl::StrCat("more than ", limit, " hosts"));
    }
    for (uint64_t n = first;; ++n) {
      std::string digits = absl::StrCat(n);
      if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
      hosts->push_back(absl::StrCat(prefix, digits, suffix));
      if (n == last) break;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandSlurmHostList(absl::string_view list, size_t limit) {
  auto parts = TopLevelParts(list);
  if (!parts.ok()) return parts.status();
  std::vector<std::string> hosts;
  for (absl::string_view part : *parts) {
    if (absl::Status s = ExpandPart(list, part, limit, &hosts); !s.ok()) return s;
  }
  if (hosts.empty()) return BadList(list, "no host");
  return hosts;
}

absl::StatusOr<std::string> FirstSlurmHost(absl::string_view list) {
  auto parts = TopLevelParts(list);
  if (!parts.ok()) return parts.status();
  if (parts->empty()) return BadList(list, "no host");
  std::vector<std::string> hosts;
  // The first part alone, expanded only up to its first host.
  absl::string_view part = parts->front();
  if (size_t open = part.find('['); open != absl::string_view::npos) {
    size_t close = part.find(']', open);
    absl::string_view ranges = part.substr(open + 1, close - open - 1);
    absl::string_view range = ranges.substr(0, ranges.find(','));
    absl::string_view first = range.substr(0, range.find('-'));
    std::string shortened =
        absl::StrCat(part.substr(0, open), "[", first, "]", part.substr(close + 1));
    if (absl::Status s = ExpandPart(list, shortened, 1, &hosts); !s.ok()) return s;
  } else if (absl::Status s = ExpandPart(list, part, 1, &hosts); !s.ok()) {
    return s;
  }
  return hosts.front();
}

absl::StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(absl::string_view list, size_t limit) {
  std::vector<int> tasks;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    int count = 0;
    uint64_t repeat = 1;
    absl::string_view number = part;
    if (size_t paren = part.find('('); paren != absl::string_view::npos) {
      number = part.substr(0, paren);
      absl::string_view times = part.substr(paren + 1);
      if (times.size() < 3 || times[0] != 'x' || times.back() != ')' ||
          !absl::SimpleAtoi(times.substr(1, times.size() - 2), &repeat) || repeat == 0) {
        return BadList(list, absl::StrCat("\"", part, "\" is not N or N(xM)"));
      }
    }
    if (!absl::SimpleAtoi(number, &count) || count < 0) {
      return BadList(list, absl::StrCat("\"", part, "\" is not N or N(xM)"));
    }
    if (repeat > limit || tasks.size() + repeat > limit) {
      return BadList(list, absl::StrCat("more than ", limit, " nodes"));
    }
    tasks.insert(tasks.end(), repeat, count);
  }
  if (tasks.empty()) return BadList(list, "no node");
  return tasks;
}

}  // namespace muster
