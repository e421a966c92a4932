#include "muster/tools/job/status_report.h"

#include <algorithm>
#include <map>
#include <vector>

#include <absl/strings/ascii.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>
#include <absl/strings/str_join.h>
#include <google/protobuf/util/json_util.h>

#include "muster/messages/requests/task_requests.h"
#include "muster/messages/task_name.h"
#include "muster/tools/common/task_events.h"

namespace muster::cli {
namespace {

using Row = std::vector<std::string>;

// Left-aligned columns, two spaces apart; the last column is not padded.
std::string Table(const std::vector<Row>& rows) {
  std::vector<size_t> widths;
  for (const Row& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string text;
  for (const Row& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      bool last = i + 1 == row.size();
      absl::StrAppend(&line, row[i], last ? "" : std::string(widths[i] - row[i].size() + 2, ' '));
    }
    absl::StrAppend(&text, absl::StripTrailingAsciiWhitespace(line), "\n");
  }
  return text;
}

std::string Age(int64_t ms) {
  if (ms < 0) return "never";
  return absl::StrFormat("%.1fs ago", static_cast<double>(ms) / 1000.0);
}

std::string Seconds(int64_t ms) {
  return absl::StrFormat("%.1fs", static_cast<double>(ms) / 1000.0);
}

// The last heartbeat; a task that registered a moment ago has none yet.
std::string Heartbeat(const proto::CoordinatedTaskStateInfo& info) {
  if (info.last_heartbeat_age_ms() >= 0 || info.connected_age_ms() < 0) {
    return Age(info.last_heartbeat_age_ms());
  }
  return absl::StrCat("none yet (registered ", Seconds(info.connected_age_ms()), " ago)");
}

// The last reported step and how long ago it changed; "-" when the task reports none.
std::string Step(const proto::CoordinatedTaskStateInfo& info) {
  if (!info.has_step()) return "-";
  return absl::StrCat(info.step(), " (for ", Seconds(std::max<int64_t>(0, info.step_age_ms())),
                      ")");
}

std::string TaskTable(const StatusReport& report) {
  std::vector<Row> rows = {{"TASK", "STATE", "INCARNATION", "HEARTBEAT", "STEP", "ERROR"}};
  for (const auto& info : report.tasks()) {
    rows.push_back({TaskName(info.task()), StateName(info.state()),
                    FormatIncarnation(info.incarnation()), Heartbeat(info), Step(info),
                    FormatTaskError(info)});
  }
  return absl::StrCat("TASKS (", report.tasks_size(), ")\n", Table(rows));
}

std::string BarrierTable(const StatusReport& report) {
  std::string title = absl::StrCat("\nOPEN BARRIERS (", report.barriers_size(), ")\n");
  if (report.barriers().empty()) return absl::StrCat(title, "none\n");
  std::vector<Row> rows = {
      {"BARRIER", "ARRIVED", "WAITED", "DEADLINE", "STARTED BY", "WAITING FOR"}};
  for (const auto& barrier : report.barriers()) {
    std::vector<proto::CoordinatedTask> waiting(barrier.waiting_for().begin(),
                                                barrier.waiting_for().end());
    rows.push_back({absl::StrCat(barrier.barrier_id(), "::", barrier.counter()),
                    absl::StrCat(barrier.arrived(), "/", barrier.total()),
                    Seconds(barrier.waited_ms()),
                    absl::StrFormat("in %.1fs", barrier.deadline_in_ms() / 1000.0),
                    TaskName(barrier.first_task()), SummarizeTasks(waiting)});
  }
  return absl::StrCat(title, Table(rows));
}

// How late a registration `late_ms` after the median was: "+1.8s after the median".
std::string AgainstMedian(int64_t late_ms) {
  if (late_ms > -50 && late_ms < 50) return "at the median";
  if (late_ms > 0) return absl::StrCat("+", Seconds(late_ms), " after the median");
  return absl::StrCat(Seconds(-late_ms), " before the median");
}

std::string KvTable(const StatusReport& report) {
  std::string title = absl::StrCat("\nKEY-VALUE STORE (", report.kv_keys(), " keys in ",
                                   report.kv_directories_size(), " directories)\n");
  if (report.kv_directories().empty()) return absl::StrCat(title, "empty\n");
  std::vector<Row> rows = {{"DIRECTORY", "KEYS"}};
  for (const auto& dir : report.kv_directories()) {
    rows.push_back({dir.directory(), absl::StrCat(dir.keys())});
  }
  return absl::StrCat(title, Table(rows));
}

// The elastic jobs' memberships; nothing without elastic jobs.
std::string MembershipTable(const StatusReport& report) {
  if (report.memberships().empty()) return "";
  std::vector<Row> rows = {{"JOB", "SIZE", "VERSION", "MEMBERS", "WAITING"}};
  for (const auto& m : report.memberships()) {
    std::string members = m.members().empty()
                              ? absl::StrCat("none: forming (", m.waiting_size(), " of at least ",
                                             m.min_tasks(), " connected)")
                              : absl::StrJoin(m.members(), ",");
    rows.push_back({m.job_name(), absl::StrCat(m.min_tasks(), ":", m.max_tasks()),
                    absl::StrCat(m.version()), members,
                    m.waiting().empty() ? "-" : absl::StrJoin(m.waiting(), ",")});
  }
  return absl::StrCat("\nELASTIC JOBS (", report.memberships_size(), ")\n", Table(rows));
}

}  // namespace

absl::StatusOr<StatusReport> CollectStatus(LeaderSession& session, absl::Duration timeout,
                                           const proto::WatchJobStateResponse& job_state) {
  StatusReport report;
  report.set_leader(session.address().ToString());
  report.set_version(job_state.version_number());
  std::vector<proto::CoordinatedTask> tasks;
  for (const auto& info : job_state.task_state()) tasks.push_back(info.task());
  auto states = session.Ask<proto::GetTaskStateResponse>(timeout, requests::GetTaskState(tasks));
  if (!states.ok()) return states.status();
  *report.mutable_tasks() = std::move(*states->mutable_task_state());
  auto barriers = session.Ask<proto::GetBarriersResponse>(timeout, proto::GetBarriersRequest{});
  if (!barriers.ok()) return barriers.status();
  *report.mutable_barriers() = std::move(*barriers->mutable_barriers());
  auto sizes = session.Ask<proto::GetKvStatsResponse>(timeout, proto::GetKvStatsRequest{});
  if (!sizes.ok()) return sizes.status();
  CountKvDirectories(*sizes, &report);
  // Each job's membership, when it is elastic (a fixed-size job is InvalidArgument).
  std::vector<std::string> jobs;
  for (const auto& info : report.tasks()) {
    if (jobs.empty() || jobs.back() != info.task().job_name()) {
      jobs.push_back(info.task().job_name());
    }
  }
  for (const std::string& job : jobs) {
    auto membership =
        session.Ask<proto::GetMembershipResponse>(timeout, requests::GetMembership(job));
    if (membership.ok()) {
      *report.add_memberships() = std::move(*membership->mutable_membership());
    } else if (membership.status().code() != absl::StatusCode::kInvalidArgument) {
      return membership.status();
    }
  }
  return report;
}

void CountKvDirectories(const proto::GetKvStatsResponse& sizes, StatusReport* report) {
  int64_t keys = 0;
  for (const auto& directory : sizes.directories()) {
    if (directory.keys() == 0) continue;  // a directory that was only read holds nothing
    KvDirectorySize* size = report->add_kv_directories();
    size->set_directory(directory.directory());
    size->set_keys(directory.keys());
    keys += directory.keys();
  }
  report->set_kv_keys(keys);
}

std::string RenderBringUp(const StatusReport& report) {
  constexpr size_t kLastShown = 10;
  std::vector<const proto::CoordinatedTaskStateInfo*> registered;
  std::vector<proto::CoordinatedTask> missing;
  for (const auto& info : report.tasks()) {
    if (info.state() == proto::TASKSTATE_CONNECTED && info.connected_age_ms() >= 0) {
      registered.push_back(&info);
    } else {
      missing.push_back(info.task());
    }
  }
  // Earliest registration first: the oldest connection.
  std::sort(registered.begin(), registered.end(), [](const auto* a, const auto* b) {
    if (a->connected_age_ms() != b->connected_age_ms()) {
      return a->connected_age_ms() > b->connected_age_ms();
    }
    return TaskLess(a->task(), b->task());
  });
  std::string text = absl::StrCat("leader ", report.leader(), ": ", registered.size(), " of ",
                                  report.tasks_size(), " tasks connected\n\n");
  if (registered.empty()) {
    absl::StrAppend(&text, "no connected task yet\n");
  } else {
    // The median of the ages; for an even count the mean of the middle two, rounded down.
    const size_t n = registered.size();
    const int64_t median =
        (registered[(n - 1) / 2]->connected_age_ms() + registered[n / 2]->connected_age_ms()) / 2;
    const auto& first = *registered.front();
    std::vector<Row> rows = {
        {"first registered", TaskName(first.task()), Age(first.connected_age_ms())},
        {"median registration", "",
         absl::StrCat(Age(median), " (+", Seconds(first.connected_age_ms() - median),
                      " after the first)")}};
    absl::StrAppend(&text, Table(rows));
    const size_t shown = std::min(kLastShown, n);
    absl::StrAppend(&text, "\nLAST TO REGISTER (", shown, " of ", n, ")\n");
    rows = {{"TASK", "REGISTERED", "AGAINST THE MEDIAN"}};
    for (size_t i = 0; i < shown; ++i) {
      const auto& info = *registered[n - 1 - i];
      rows.push_back({TaskName(info.task()), Age(info.connected_age_ms()),
                      AgainstMedian(median - info.connected_age_ms())});
    }
    absl::StrAppend(&text, Table(rows));
  }
  if (!missing.empty()) {
    absl::StrAppend(&text, "\nNOT CONNECTED (", missing.size(), "): ", SummarizeTasks(missing),
                    "\n");
  }
  return text;
}

// An HA job's leaders and what each is; nothing when one leader was given.
std::string LeaderTable(const StatusReport& report) {
  if (report.leaders().empty()) return "";
  std::vector<Row> rows = {{"LEADER", "ROLE", ""}};
  for (const auto& leader : report.leaders()) {
    std::string detail = leader.detail();
    if (leader.role() == "standby") {
      detail = detail.empty() ? "knows no active leader (an election is under way)"
                              : absl::StrCat("names ", detail, " as the active leader");
    }
    rows.push_back({leader.address(), leader.role(), detail});
  }
  return absl::StrCat("LEADERS (", report.leaders_size(), ")\n", Table(rows), "\n");
}

std::string RenderStatusTable(const StatusReport& report) {
  return absl::StrCat("leader ", report.leader(), " (job-state version ", report.version(), ")\n\n",
                      LeaderTable(report), TaskTable(report), MembershipTable(report),
                      BarrierTable(report), KvTable(report));
}

std::string RenderStatusJson(const StatusReport& report) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  auto status = google::protobuf::util::MessageToJsonString(report, &json, options);
  if (!status.ok()) return absl::StrCat("{\"error\":\"", status.ToString(), "\"}");
  return json;
}

}  // namespace muster::cli
