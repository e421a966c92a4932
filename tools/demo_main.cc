// The demo cluster (make demo): a leader process (`muster serve`) and four worker processes
// (examples/worker) on 127.0.0.1 walk through a job's life, and this driver prints the
// timeline: registration progress, topology exchange, the bootstrap value passed through a
// blocking get, a barrier, then one worker killed and how fast every other task learns of it,
// and the fate-sharing shutdown. Exits 0 when everything behaved as expected.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>
#include <absl/strings/str_split.h>
#include <absl/time/clock.h>

#include "muster/messages/requests/task_requests.h"
#include "muster/messages/task_name.h"
#include "muster/tools/common/cli_common.h"
#include "muster/tools/run/subprocess.h"

ABSL_FLAG(std::string, muster_bin, "build/tools/muster", "The muster command");
ABSL_FLAG(std::string, worker_bin, "build/examples/worker", "The worker example");
ABSL_FLAG(int, workers, 4, "Worker processes");

namespace muster {
namespace {

constexpr absl::Duration kBound = absl::Seconds(20);
const absl::Time kStart = absl::Now();

void Line(absl::Time at, const std::string& text) {
  std::printf("[%7.3fs] %s\n", absl::ToDoubleSeconds(at - kStart), text.c_str());
  std::fflush(stdout);
}
void Line(const std::string& text) { Line(absl::Now(), text); }

int Fail(const std::string& why) {
  Line("DEMO FAILED: " + why);
  return 1;
}

// Waits until `count` tasks are connected, printing each registration step.
absl::Status WaitRegistered(cli::LeaderSession& leader, int count, int total) {
  int64_t version = -1;
  int shown = -1;
  absl::Time deadline = absl::Now() + kBound;
  while (absl::Now() < deadline) {
    auto state = leader.Ask<proto::WatchJobStateResponse>(
        deadline - absl::Now(), requests::WatchJobState("worker", version));
    if (!state.ok()) return state.status();
    version = state->version_number();
    std::vector<proto::CoordinatedTask> missing;
    for (const auto& info : state->task_state()) {
      if (info.state() != proto::TASKSTATE_CONNECTED) missing.push_back(info.task());
    }
    int connected = total - static_cast<int>(missing.size());
    if (connected == shown) continue;
    shown = connected;
    Line(absl::StrCat(connected, "/", total, " registered",
                      missing.empty() ? "" : ", waiting for " + SummarizeTasks(missing)));
    if (connected >= count) return absl::OkStatus();
  }
  return absl::DeadlineExceededError("tasks did not register in time");
}

// A worker's lines "NAME text at_us=T": text and time.
std::vector<std::pair<absl::Time, std::string>> WorkerLines(const Subprocess& worker) {
  std::vector<std::pair<absl::Time, std::string>> lines;
  for (absl::string_view line : absl::StrSplit(worker.output(), '\n', absl::SkipEmpty())) {
    size_t at = line.rfind(" at_us=");
    int64_t micros = 0;
    if (at == absl::string_view::npos || !absl::SimpleAtoi(line.substr(at + 7), &micros)) continue;
    lines.emplace_back(absl::FromUnixMicros(micros), std::string(line.substr(0, at)));
  }
  return lines;
}

struct Cluster {
  std::unique_ptr<Subprocess> leader;
  std::string address;
  std::unique_ptr<cli::LeaderSession> session;
  std::vector<std::unique_ptr<Subprocess>> workers;
};

absl::Status StartLeader(Cluster& c, int workers) {
  auto leader = Subprocess::Start({absl::GetFlag(FLAGS_muster_bin), "serve", "--job",
                                   absl::StrCat("worker=", workers), "--port", "0",
                                   "--heartbeat-timeout", "2s"});
  if (!leader.ok()) return leader.status();
  c.leader = std::move(*leader);
  auto ready = c.leader->WaitForLine("muster leader ready at ", kBound);
  if (!ready.ok()) return ready.status();
  Line("leader: " + *ready);
  std::string rest = ready->substr(ready->find(" at ") + 4);
  c.address = rest.substr(0, rest.find(' '));
  auto address = cli::ParseLeaderAddress(c.address);
  if (!address.ok()) return address.status();
  auto session = cli::LeaderSession::Connect(*address, kBound);
  if (!session.ok()) return session.status();
  c.session = std::move(*session);
  return absl::OkStatus();
}

absl::Status StartWorker(Cluster& c, int task) {
  auto worker = Subprocess::Start({absl::GetFlag(FLAGS_worker_bin), "--leader=" + c.address,
                                   absl::StrCat("--task=", task), "--hold",
                                   "--heartbeat_timeout=2s", "--hold_timeout=20s"});
  if (!worker.ok()) return worker.status();
  c.workers.push_back(std::move(*worker));
  return absl::OkStatus();
}

// Prints every worker's steps up to the barrier, in time order.
absl::Status ShowBringUp(Cluster& c) {
  std::vector<std::pair<absl::Time, std::string>> lines;
  for (auto& worker : c.workers) {
    auto passed = worker->WaitForLine("passed barrier ready_to_train", kBound);
    if (!passed.ok()) return passed.status();
    auto mine = WorkerLines(*worker);
    lines.insert(lines.end(), mine.begin(), mine.end());
  }
  std::sort(lines.begin(), lines.end());
  Line("what the workers did (their own clocks):");
  for (const auto& [at, text] : lines) Line(at, text);
  return absl::OkStatus();
}

// Kills the last worker and reports when each other task learned of it.
absl::Status KillAndWatch(Cluster& c) {
  Subprocess& victim = *c.workers.back();
  absl::Time killed = absl::Now();
  victim.Signal(SIGKILL);
  Line(absl::StrCat("kill -9 worker ", c.workers.size() - 1, " (pid ", victim.pid(), ")"));
  double slowest = 0;
  for (size_t i = 0; i + 1 < c.workers.size(); ++i) {
    auto line = c.workers[i]->WaitForLine("error callback", kBound);
    if (!line.ok()) return line.status();
    int64_t micros = 0;
    absl::SimpleAtoi(line->substr(line->rfind("at_us=") + 6), &micros);
    double ms = absl::ToDoubleMilliseconds(absl::FromUnixMicros(micros) - killed);
    slowest = std::max(slowest, ms);
    std::string what = line->substr(0, line->rfind(" at_us="));
    Line(absl::FromUnixMicros(micros),
         absl::StrCat(what, "  (", absl::StrFormat("%.1f", ms), " ms after the kill)"));
  }
  Line(absl::StrFormat("every surviving task knew after %.1f ms", slowest));
  return absl::OkStatus();
}

absl::Status FinishDown(Cluster& c) {
  for (size_t i = 0; i + 1 < c.workers.size(); ++i) {
    auto code = c.workers[i]->Wait(kBound);
    if (!code.ok()) return code.status();
    if (*code != 2) {  // the example worker's status for "the job failed elsewhere"
      return absl::InternalError(
          absl::StrCat("worker ", i, " exited ", *code, "; expected 2 (left a failed job)"));
    }
  }
  Line(absl::StrCat(c.workers.size() - 1,
                    " surviving workers left the failed job (fate sharing), exit status 2"));
  c.leader->Signal(SIGTERM);
  auto code = c.leader->Wait(kBound);
  if (!code.ok()) return code.status();
  for (absl::string_view line : absl::StrSplit(c.leader->output(), '\n', absl::SkipEmpty())) {
    if (absl::StrContains(line, "failed") || absl::StrContains(line, "stale")) {
      Line(absl::StrCat("leader log: ", line));
    }
  }
  Line(absl::StrCat("leader stopped (exit ", *code, ")"));
  return *code == 0 ? absl::OkStatus() : absl::InternalError("leader exit code");
}

int Run() {
  const int workers = absl::GetFlag(FLAGS_workers);
  Cluster c;
  if (auto s = StartLeader(c, workers); !s.ok()) return Fail(s.ToString());
  for (int task = 0; task + 1 < workers; ++task) {
    if (auto s = StartWorker(c, task); !s.ok()) return Fail(s.ToString());
  }
  if (auto s = WaitRegistered(*c.session, workers - 1, workers); !s.ok()) return Fail(s.ToString());
  Line(absl::StrCat("starting the last worker (worker/", workers - 1, ") late"));
  if (auto s = StartWorker(c, workers - 1); !s.ok()) return Fail(s.ToString());
  if (auto s = WaitRegistered(*c.session, workers, workers); !s.ok()) return Fail(s.ToString());
  if (auto s = ShowBringUp(c); !s.ok()) return Fail(s.ToString());
  if (auto s = KillAndWatch(c); !s.ok()) return Fail(s.ToString());
  if (auto s = FinishDown(c); !s.ok()) return Fail(s.ToString());
  Line("demo ok");
  return 0;
}

}  // namespace
}  // namespace muster

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return muster::Run();
}
