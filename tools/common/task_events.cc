#include "muster/tools/common/task_events.h"

#include <map>

#include <absl/status/status.h>
#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>
#include <absl/strings/strip.h>

#include "muster/messages/task_name.h"

namespace muster::cli {
namespace {

std::map<std::string, const proto::CoordinatedTaskStateInfo*> ByTask(
    const proto::WatchJobStateResponse& snapshot) {
  std::map<std::string, const proto::CoordinatedTaskStateInfo*> tasks;
  for (const auto& info : snapshot.task_state()) tasks[TaskName(info.task())] = &info;
  return tasks;
}

bool Changed(const proto::CoordinatedTaskStateInfo* before,
             const proto::CoordinatedTaskStateInfo& after) {
  if (before == nullptr) return after.state() != proto::TASKSTATE_DISCONNECTED;
  return before->state() != after.state() || before->incarnation() != after.incarnation() ||
         before->error_message() != after.error_message();
}

TaskEventKind KindOf(const proto::CoordinatedTaskStateInfo& info) {
  switch (info.state()) {
    case proto::TASKSTATE_CONNECTED:
      return TaskEventKind::kRegistered;
    case proto::TASKSTATE_ERROR:
      return absl::StrContains(info.error_message(), "heartbeat timeout") ? TaskEventKind::kStale
                                                                          : TaskEventKind::kFailed;
    default:
      return TaskEventKind::kDisconnected;
  }
}

}  // namespace

const char* TaskEventName(TaskEventKind kind) {
  switch (kind) {
    case TaskEventKind::kRegistered:
      return "registered";
    case TaskEventKind::kStale:
      return "stale";
    case TaskEventKind::kFailed:
      return "failed";
    case TaskEventKind::kDisconnected:
      return "disconnected";
  }
  return "changed";
}

std::vector<TaskEvent> DiffTaskStates(const proto::WatchJobStateResponse& before,
                                      const proto::WatchJobStateResponse& after) {
  auto old_states = ByTask(before);
  std::vector<TaskEvent> events;
  for (const auto& [name, info] : ByTask(after)) {
    auto it = old_states.find(name);
    const proto::CoordinatedTaskStateInfo* old = it == old_states.end() ? nullptr : it->second;
    if (!Changed(old, *info)) continue;
    // Registered and then failed or left between two snapshots: both are news.
    bool registered =
        info->incarnation() != 0 && (old == nullptr || old->incarnation() != info->incarnation());
    if (registered && info->state() != proto::TASKSTATE_CONNECTED) {
      events.push_back({TaskEventKind::kRegistered, *info});
    }
    events.push_back({KindOf(*info), *info});
  }
  return events;
}

std::string FormatTaskEvent(const TaskEvent& event) {
  std::string line = absl::StrCat(TaskName(event.info.task()), " ", TaskEventName(event.kind));
  switch (event.kind) {
    case TaskEventKind::kRegistered:
      absl::StrAppend(&line, " incarnation=", FormatIncarnation(event.info.incarnation()));
      break;
    case TaskEventKind::kStale:
    case TaskEventKind::kFailed:
      absl::StrAppend(&line, ": ", FormatTaskError(event.info));
      break;
    case TaskEventKind::kDisconnected:
      break;
  }
  return line;
}

std::string StateName(proto::CoordinatedTaskState state) {
  return std::string(absl::StripPrefix(proto::CoordinatedTaskState_Name(state), "TASKSTATE_"));
}

std::string FormatIncarnation(uint64_t incarnation) {
  return incarnation == 0 ? "-" : absl::StrFormat("0x%016x", incarnation);
}

std::string FormatTaskError(const proto::CoordinatedTaskStateInfo& info) {
  if (info.error_code() == 0 && info.error_message().empty()) return "";
  return absl::StrCat(absl::StatusCodeToString(static_cast<absl::StatusCode>(info.error_code())),
                      ": ", info.error_message());
}

}  // namespace muster::cli
