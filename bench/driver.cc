#include "muster/bench/driver.h"

#include <signal.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <vector>

#include "muster/bench/stats.h"

namespace muster::bench {
namespace {

using Children = std::vector<std::unique_ptr<Child>>;

struct Run {
  std::map<std::string, std::string> flags;  // passed on to every child
  std::string system;
  std::string workload;
  std::string variant;
  int64_t param = 1;
  int procs = 1;
  int64_t deadline_ns = 0;
  ChildMain child_main = nullptr;

  int64_t Int(const std::string& key, int64_t fallback) const {
    auto it = flags.find(key);
    return it == flags.end() ? fallback : std::stoll(it->second);
  }
  void Row(const std::string& metric, double value, const std::string& unit) const {
    std::printf("%s,%s,%s,%lld,%s,%.3f,%s\n", system.c_str(), variant.c_str(), workload.c_str(),
                static_cast<long long>(param), metric.c_str(), value, unit.c_str());
    std::fflush(stdout);
  }
  int Fail(const std::string& what) const {
    std::fprintf(stderr, "%s %s/%s param=%lld: %s\n", system.c_str(), workload.c_str(),
                 variant.c_str(), static_cast<long long>(param), what.c_str());
    return 1;
  }
};

std::unique_ptr<Child> Spawn(const Run& run, std::map<std::string, std::string> overrides) {
  std::map<std::string, std::string> flags = run.flags;
  for (auto& [key, value] : overrides) flags[key] = value;
  std::vector<std::string> args;
  for (const auto& [key, value] : flags) args.push_back("--" + key + "=" + value);
  return Child::Start(args, run.child_main);
}

// Starts the server and returns its port, or 0.
int StartServer(const Run& run, std::unique_ptr<Child>* server, Record* first = nullptr) {
  *server = Spawn(run, {{"role", "server"}});
  Record record;
  if (!*server || !(*server)->Next(&record, run.deadline_ns)) return 0;
  if (first != nullptr) {
    *first = record;
    if (!(*server)->Next(&record, run.deadline_ns)) return 0;
  }
  return record.kind == "ready" ? static_cast<int>(record.Int("port", 0)) : 0;
}

// Starts `count` clients of `port` and waits until each is ready.
bool StartClients(const Run& run, int port, int count, Children* clients) {
  for (int i = 0; i < count; ++i) {
    clients->push_back(Spawn(
        run, {{"role", "client"}, {"port", std::to_string(port)}, {"index", std::to_string(i)}}));
    if (!clients->back()) return false;
  }
  Record record;
  for (auto& client : *clients) {
    if (!client->NextOf("ready", &record, run.deadline_ns)) return false;
  }
  return true;
}

int64_t Go(Children& clients) {
  int64_t start = MonoNs();
  for (auto& client : clients) client->Go();
  return start;
}

int Seq(const Run& run, Children& clients) {
  Go(clients);
  Record result;
  if (!clients[0]->NextOf("result", &result, run.deadline_ns)) return run.Fail("no result");
  run.Row("median_us", result.Double("median_us"), "us");
  run.Row("p99_us", result.Double("p99_us"), "us");
  return 0;
}

int Conc(const Run& run, Children& clients) {
  Go(clients);
  double rate = 0;
  Record result;
  for (auto& client : clients) {
    if (!client->NextOf("result", &result, run.deadline_ns)) return run.Fail("no result");
    rate += result.Double("ops") * 1e9 / result.Double("elapsed_ns");
  }
  run.Row("ops_per_s", rate, "ops/s");
  return 0;
}

struct Round {
  int64_t first = INT64_MAX, last = 0, release = 0;
};

int Barrier(const Run& run, Children& clients) {
  Go(clients);
  std::map<int64_t, Round> rounds;
  Record record;
  for (auto& client : clients) {
    while (client->Next(&record, run.deadline_ns) && record.kind == "round") {
      Round& round = rounds[record.Int("r")];
      round.first = std::min(round.first, record.Int("first"));
      round.last = std::max(round.last, record.Int("last"));
      round.release = std::max(round.release, record.Int("release"));
    }
    if (record.kind != "done") return run.Fail("no barrier results");
  }
  std::vector<double> release_us, round_us;
  for (const auto& [r, round] : rounds) {
    if (r == 0) continue;  // warm-up round
    release_us.push_back((round.release - round.last) / 1e3);
    round_us.push_back((round.release - round.first) / 1e3);
  }
  Summary release = Summarize(release_us), whole = Summarize(round_us);
  run.Row("release_median_us", release.median, "us");
  run.Row("release_max_us", release.max, "us");
  run.Row("round_median_us", whole.median, "us");
  run.Row("round_max_us", whole.max, "us");
  return 0;
}

int Bringup(const Run& run, Children& clients) {
  int64_t start = Go(clients);
  int64_t end = 0;
  Record result;
  for (auto& client : clients) {
    if (!client->NextOf("result", &result, run.deadline_ns)) return run.Fail("no result");
    end = std::max(end, result.Int("end"));
  }
  run.Row("wall_ms", (end - start) / 1e6, "ms");
  return 0;
}

// Interval CPU use of the server between consecutive samples, in percent of one core.
std::vector<double> CpuPercents(const std::vector<Record>& samples) {
  std::vector<double> percents;
  for (size_t i = 1; i < samples.size(); ++i) {
    double cpu = samples[i].Double("cpu_ns") - samples[i - 1].Double("cpu_ns");
    double wall = samples[i].Double("mono_ns") - samples[i - 1].Double("mono_ns");
    percents.push_back(100 * cpu / wall);
  }
  return percents;
}

// Clients heartbeat for --duration_ms; the server is sampled --samples times over the window
// that starts --hb_warmup_ms after go.
int Heartbeat(const Run& run) {
  std::unique_ptr<Child> server;
  Record baseline;
  int port = StartServer(run, &server, &baseline);
  if (port == 0 || baseline.kind != "baseline") return run.Fail("the server did not start");
  Children clients;
  if (!StartClients(run, port, run.procs, &clients)) return run.Fail("clients did not start");
  int64_t warmup = run.Int("hb_warmup_ms", 3000);
  int64_t samples = run.Int("samples", 6);
  int64_t window = run.Int("window_ms", 30'000);
  int64_t start = Go(clients) + warmup * 1'000'000;
  std::vector<Record> taken(static_cast<size_t>(samples) + 1);
  for (int64_t i = 0; i <= samples; ++i) {
    SleepUntilNs(start + window * 1'000'000 * i / samples);
    server->Signal(SIGUSR1);
    if (!server->NextOf("sample", &taken[i], run.deadline_ns)) return run.Fail("no sample");
  }
  int64_t ok = 0, errors = 0;
  Record result;
  for (auto& client : clients) {
    if (!client->NextOf("result", &result, run.deadline_ns)) return run.Fail("no result");
    ok += result.Int("ok", 0);
    errors += result.Int("errors", 0);
  }
  // The client processes exit once they reported: the leader loses every task at once. Its CPU
  // from then until a 500 ms sample finds it idle (under 2% of a core; 30 s at most).
  Record last, now;
  server->Signal(SIGUSR1);
  if (!server->NextOf("sample", &last, run.deadline_ns)) return run.Fail("no sample");
  int64_t lost_at = last.Int("mono_ns", 0), quiet_at = lost_at;
  for (Record before = last; MonoNs() - lost_at < 30'000'000'000LL; before = now) {
    SleepUntilNs(MonoNs() + 500'000'000);
    server->Signal(SIGUSR1);
    if (!server->NextOf("sample", &now, run.deadline_ns)) return run.Fail("no sample");
    quiet_at = now.Int("mono_ns", 0);
    if (CpuPercents({before, now})[0] < 2) break;
  }
  double loss_cpu_ms = (now.Double("cpu_ns") - last.Double("cpu_ns")) / 1e6;
  Summary cpu = Summarize(CpuPercents(taken));
  double rss = taken.back().Double("rss_kib");
  run.Row("cpu_pct_median", cpu.median, "%core");
  run.Row("cpu_pct_max", cpu.max, "%core");
  run.Row("rss_kib", rss, "KiB");
  run.Row("rss_per_task_kib", (rss - baseline.Double("rss_kib")) / run.param, "KiB");
  double heap = taken.back().Double("heap_kib");
  run.Row("heap_per_task_kib", (heap - baseline.Double("heap_kib")) / run.param, "KiB");
  run.Row("beats_per_s", ok * 1000.0 / run.Int("duration_ms", 1000), "1/s");
  run.Row("beat_errors", static_cast<double>(errors), "count");
  run.Row("loss_cpu_ms", loss_cpu_ms, "ms");
  run.Row("loss_quiet_ms", (quiet_at - lost_at) / 1e6, "ms");
  return 0;
}

struct Detection {
  double first_ms = -1;  // kill -> the first survivor learnt of it
  double last_ms = -1;   // kill -> the last survivor learnt of it
};

// One trial: every client process runs one task; the last one is killed with SIGKILL.
Detection FailureTrial(const Run& run, int* missed) {
  std::unique_ptr<Child> server;
  int port = StartServer(run, &server);
  Children clients;
  if (port == 0 || !StartClients(run, port, run.procs, &clients)) return {};
  int64_t killed = MonoNs();
  clients.back()->Signal(SIGKILL);
  int64_t deadline = std::min(run.deadline_ns, killed + 5'000'000'000);
  int64_t first = INT64_MAX, last = 0;
  Record report;
  for (size_t i = 0; i + 1 < clients.size(); ++i) {
    if (clients[i]->NextOf("report", &report, deadline)) {
      first = std::min(first, report.Int("at_ns"));
      last = std::max(last, report.Int("at_ns"));
    } else {
      ++*missed;
    }
  }
  if (last == 0) return {};
  return {(first - killed) / 1e6, (last - killed) / 1e6};
}

int Failure(const Run& run) {
  int64_t trials = run.Int("trials", 10);
  std::vector<double> first_ms, last_ms;
  int missed = 0, failed = 0;
  for (int64_t i = 0; i < trials && MonoNs() < run.deadline_ns; ++i) {
    Detection detection = FailureTrial(run, &missed);
    if (detection.last_ms < 0) {
      ++failed;
    } else {
      first_ms.push_back(detection.first_ms);
      last_ms.push_back(detection.last_ms);
    }
  }
  if (last_ms.empty()) return run.Fail("no trial completed");
  Summary detect = Summarize(last_ms);
  run.Row("detect_median_ms", detect.median, "ms");
  run.Row("detect_max_ms", detect.max, "ms");
  run.Row("first_report_median_ms", Summarize(first_ms).median, "ms");
  run.Row("trials", static_cast<double>(detect.count), "count");
  run.Row("missed_reports", missed + failed, "count");
  return 0;
}

// Leader restart: every client process's agents are connected; the leader is killed
// (SIGKILL) and started again on the same port and state dir. resume_ms: new leader up -> every
// agent reconnected and its call answered; outage_ms: kill -> the same.
int Resume(const Run& run) {
  std::unique_ptr<Child> server;
  int port = StartServer(run, &server);
  if (port == 0) return run.Fail("the server did not start");
  Children clients;
  if (!StartClients(run, port, run.procs, &clients)) return run.Fail("clients did not start");
  int64_t killed = MonoNs();
  server->Signal(SIGKILL);
  server.reset();  // reaped
  Go(clients);     // the agents' calls wait for the new leader
  if (int64_t delay = run.Int("restart_delay_ms", 0); delay > 0) {
    struct timespec pause {
      delay / 1000, (delay % 1000) * 1'000'000
    };
    nanosleep(&pause, nullptr);
  }
  Run again = run;
  again.flags["listen_port"] = std::to_string(port);
  if (StartServer(again, &server) != port) return run.Fail("the leader did not restart");
  int64_t up = MonoNs();
  int64_t end = 0, errors = 0;
  Record result;
  for (auto& client : clients) {
    if (!client->NextOf("result", &result, run.deadline_ns)) return run.Fail("no result");
    end = std::max(end, result.Int("end"));
    errors += result.Int("errors");
  }
  run.Row("resume_ms", (end - up) / 1e6, "ms");
  run.Row("outage_ms", (end - killed) / 1e6, "ms");
  run.Row("restart_ms", (up - killed) / 1e6, "ms");
  run.Row("errors", static_cast<double>(errors), "count");
  return 0;
}

int DefaultProcs(const std::string& workload, int64_t param) {
  if (workload == "seq") return 1;
  if (workload == "failure") return static_cast<int>(param);
  if (workload == "conc") return static_cast<int>(std::min<int64_t>(param, 4));
  return 4;
}

}  // namespace

void EmitSeqResult(const std::vector<double>& us) {
  Summary s = Summarize(us);
  size_t over_1ms = 0;
  for (double x : us) over_1ms += x > 1000;
  Emit("result", "median_us=" + std::to_string(s.median) + " p90_us=" + std::to_string(s.p90) +
                     " p99_us=" + std::to_string(s.p99) + " max_us=" + std::to_string(s.max) +
                     " over_1ms=" + std::to_string(over_1ms) + " ops=" + std::to_string(s.count));
}

ClientArgs ParseClientArgs(const Flags& flags) {
  ClientArgs args;
  args.workload = flags.Get("workload", "seq");
  args.variant = flags.Get("variant", "");
  args.port = static_cast<int>(flags.Int("port", 0));
  args.index = static_cast<int>(flags.Int("index", 0));
  args.procs = static_cast<int>(std::max<int64_t>(1, flags.Int("procs", 1)));
  args.param = flags.Int("param", 1);
  args.ops = flags.Int("ops", args.ops);
  args.warmup = flags.Int("warmup", args.warmup);
  args.rounds = flags.Int("rounds", args.rounds);
  args.duration_ms = flags.Int("duration_ms", args.duration_ms);
  args.request_timeout_ms = flags.Int("request_timeout_ms", args.request_timeout_ms);
  args.tls_dir = flags.Get("tls_dir", "");
  args.token = flags.Get("token", "");
  return args;
}

int RunDriver(const Flags& flags, const std::string& system, ChildMain child_main) {
  Run run;
  run.child_main = child_main;
  run.flags = flags.values();
  run.system = system;
  run.workload = flags.Get("workload", "seq");
  run.variant = flags.Get("variant", "");
  run.param = flags.Int("param", 1);
  run.procs = static_cast<int>(flags.Int("procs", DefaultProcs(run.workload, run.param)));
  run.flags["procs"] = std::to_string(run.procs);
  run.flags.erase("role");
  run.deadline_ns = MonoNs() + flags.Int("deadline_s", 120) * 1'000'000'000;
  // A durable leader (a --variant ending in -durable, and the resume workload) gets a fresh
  // state dir, removed afterwards.
  std::string state_dir;
  if (system == "muster" &&
      (run.workload == "resume" || run.variant.find("-durable") != std::string::npos)) {
    char pattern[] = "/tmp/muster-bench-state-XXXXXX";
    if (mkdtemp(pattern) == nullptr) return run.Fail("cannot create a state dir");
    state_dir = pattern;
    run.flags["state_dir"] = state_dir;
  }
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() {
      if (!dir.empty()) std::filesystem::remove_all(dir);
    }
  } remove_dir{state_dir};
  if (run.workload == "heartbeat") return Heartbeat(run);
  if (run.workload == "failure") return Failure(run);
  if (run.workload == "resume") return Resume(run);
  std::unique_ptr<Child> server;
  int port = StartServer(run, &server);
  if (port == 0) return run.Fail("the server did not start");
  Children clients;
  if (!StartClients(run, port, run.procs, &clients)) return run.Fail("clients did not start");
  if (run.workload == "seq") return Seq(run, clients);
  if (run.workload == "conc") return Conc(run, clients);
  if (run.workload == "barrier") return Barrier(run, clients);
  if (run.workload == "bringup") return Bringup(run, clients);
  return run.Fail("unknown workload (seq, conc, barrier, bringup, heartbeat, failure, resume)");
}

}  // namespace muster::bench
