#include "muster/messages/task_name.h"

#include <algorithm>
#include <map>

#include <absl/strings/escaping.h>
#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/strings/strip.h>

namespace muster {
namespace {

// Formats sorted, unique ids as "3,7-12".
std::string IdRanges(const std::vector<int>& ids) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    parts.push_back(j == i ? absl::StrCat(ids[i]) : absl::StrCat(ids[i], "-", ids[j]));
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
}

}  // namespace

proto::CoordinatedTask MakeTask(absl::string_view job, int task_id) {
  proto::CoordinatedTask task;
  task.set_job_name(std::string(job));
  task.set_task_id(task_id);
  return task;
}

std::string TaskName(const proto::CoordinatedTask& task) {
  return absl::StrCat("/job:", task.job_name(), "/task:", task.task_id());
}

std::string WireTextForMessage(absl::string_view text) {
  constexpr size_t kMaxQuoted = 128;
  bool printable = std::all_of(text.begin(), text.end(), [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
  });
  if (printable && text.size() <= kMaxQuoted) return std::string(text);
  std::string quoted = absl::CHexEscape(text.substr(0, kMaxQuoted / 2));
  if (text.size() > kMaxQuoted / 2) absl::StrAppend(&quoted, "...(", text.size(), " bytes)");
  return quoted;
}

std::string JobNameForMessage(absl::string_view job) { return WireTextForMessage(job); }

std::string TaskNameForMessage(const proto::CoordinatedTask& task) {
  return absl::StrCat("/job:", JobNameForMessage(task.job_name()), "/task:", task.task_id());
}

absl::StatusOr<proto::CoordinatedTask> ParseTaskName(absl::string_view name) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("invalid task name \"", name, "\": ", why,
                                                   "; expected /job:<name>/task:<id>"));
  };
  absl::string_view rest = name;
  if (!absl::ConsumePrefix(&rest, "/job:")) return bad("missing /job:");
  size_t slash = rest.find('/');
  if (slash == absl::string_view::npos || slash == 0) return bad("missing job name or /task:");
  absl::string_view job = rest.substr(0, slash);
  rest.remove_prefix(slash);
  if (absl::ConsumePrefix(&rest, "/replica:")) {
    size_t next = rest.find('/');
    int replica = 0;
    if (next == absl::string_view::npos || !absl::SimpleAtoi(rest.substr(0, next), &replica)) {
      return bad("bad /replica: segment");
    }
    rest.remove_prefix(next);
  }
  int id = 0;
  if (!absl::ConsumePrefix(&rest, "/task:") || !absl::SimpleAtoi(rest, &id) || id < 0) {
    return bad("missing or bad /task:<id>");
  }
  return MakeTask(job, id);
}

bool TaskLess(const proto::CoordinatedTask& a, const proto::CoordinatedTask& b) {
  if (a.job_name() != b.job_name()) return a.job_name() < b.job_name();
  return a.task_id() < b.task_id();
}

bool SameTask(const proto::CoordinatedTask& a, const proto::CoordinatedTask& b) {
  return a.job_name() == b.job_name() && a.task_id() == b.task_id();
}

std::string SummarizeTasks(absl::Span<const proto::CoordinatedTask> tasks) {
  if (tasks.empty()) return "none";
  std::map<std::string, std::vector<int>> by_job;
  for (const auto& task : tasks) by_job[task.job_name()].push_back(task.task_id());
  std::vector<std::string> parts;
  for (auto& [job, ids] : by_job) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    parts.push_back(ids.size() == 1 ? absl::StrCat(job, "/", ids[0])
                                    : absl::StrCat(job, "/[", IdRanges(ids), "]"));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace muster
