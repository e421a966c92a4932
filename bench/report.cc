// Aggregates the raw rows of bench/run.sh (pin,rep,system,variant,workload,param,metric,value,
// unit) over repetitions: prints one Markdown table per pinning and workload (median and
// [min-max] of the runs), the targets of the issue with their verdicts, and writes the
// aggregated CSV.
//
// Run:  bench_report --raw=bench/results/raw.csv --csv=bench/results/latest.csv
//                    --machine="nproc=2 cpu=AMD EPYC"     (one command line)
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "muster/bench/harness.h"
#include "muster/bench/stats.h"

namespace muster::bench {
namespace {

struct Key {
  std::string pin, workload;
  int64_t param;
  std::string metric, series;
  auto Tie() const { return std::tie(pin, workload, param, metric, series); }
  bool operator<(const Key& other) const { return Tie() < other.Tie(); }
};

struct Cell {
  std::vector<double> values;
  std::string unit;
};

using Table = std::map<Key, Cell>;

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) fields.push_back(field);
  return fields;
}

// Series are "system" or "system:variant".
Table Load(const std::string& path) {
  Table table;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f = SplitCsv(line);
    if (f.size() != 9 || f[0] == "pin") continue;
    std::string series = f[3].empty() ? f[2] : f[2] + ":" + f[3];
    Cell& cell = table[Key{f[0], f[4], std::stoll(f[5]), f[6], series}];
    cell.values.push_back(std::stod(f[7]));
    cell.unit = f[8];
  }
  return table;
}

std::string Format(double value) {
  char text[32];
  double magnitude = value < 0 ? -value : value;
  std::snprintf(text, sizeof text,
                magnitude >= 100  ? "%.0f"
                : magnitude >= 10 ? "%.1f"
                                  : "%.2f",
                value);
  return text;
}

std::string Describe(const Cell& cell) {
  Summary s = Summarize(cell.values);
  if (s.count == 1) return Format(s.median) + " (1 run)";
  return Format(s.median) + " [" + Format(s.min) + "–" + Format(s.max) + "]";
}

// One table per pinning and workload: rows (param, metric) and one column per series, or,
// with many series (the CAF settings comparison), one row per series.
void PrintWorkloadTable(const Table& table, const std::string& pin, const std::string& workload) {
  std::set<std::string> series;
  std::set<std::tuple<int64_t, std::string>> rows;
  for (const auto& [key, cell] : table) {
    if (key.pin != pin || key.workload != workload) continue;
    series.insert(key.series);
    rows.insert({key.param, key.metric});
  }
  auto cell = [&](int64_t param, const std::string& metric, const std::string& s) {
    auto it = table.find(Key{pin, workload, param, metric, s});
    return it == table.end() ? std::string("–") : Describe(it->second);
  };
  std::printf("\n#### %s — %s\n\n", workload.c_str(), pin.c_str());
  if (series.size() > 6) {
    std::printf("| series |");
    for (const auto& [param, metric] : rows)
      std::printf(" %lld %s |", (long long)param, metric.c_str());
    std::printf("\n|---|");
    for (size_t i = 0; i < rows.size(); ++i) std::printf("---|");
    for (const auto& s : series) {
      std::printf("\n| %s |", s.c_str());
      for (const auto& [param, metric] : rows) std::printf(" %s |", cell(param, metric, s).c_str());
    }
    std::printf("\n");
    return;
  }
  std::printf("| param | metric |");
  for (const auto& s : series) std::printf(" %s |", s.c_str());
  std::printf("\n|---|---|");
  for (size_t i = 0; i < series.size(); ++i) std::printf("---|");
  for (const auto& [param, metric] : rows) {
    std::printf("\n| %lld | %s |", static_cast<long long>(param), metric.c_str());
    for (const auto& s : series) std::printf(" %s |", cell(param, metric, s).c_str());
  }
  std::printf("\n");
}

void PrintWorkloadTables(const Table& table) {
  std::set<std::tuple<std::string, std::string>> groups;
  for (const auto& [key, cell] : table) groups.insert({key.pin, key.workload});
  for (const auto& [pin, workload] : groups) PrintWorkloadTable(table, pin, workload);
}

struct Target {
  std::string workload;
  int64_t param;
  std::string metric;
  std::string series;
  std::string against;  // another series (ratio target), or "" (absolute target)
  bool at_most;         // value (or ratio) must be <= limit; else >= limit
  double limit;
  std::string text;
  std::string against_metric = "";  // the metric of `against`; empty: `metric`
};

const std::vector<Target>& Targets() {
  static const std::vector<Target> targets = {
      // The request path (one client; p99 against the series' own median).
      {"seq", 1, "median_us", "muster:tryget-hosted", "tcpstore:get", true, 1,
       "TryGet median ≤ TCPStore get (client actor hosted)"},
      {"seq", 1, "median_us", "muster:insert-hosted", "tcpstore:get", true, 1,
       "Insert median ≤ TCPStore get (client actor hosted)"},
      {"seq", 1, "median_us", "muster:tryget-hosted", "tcpstore:add", true, 1,
       "TryGet median ≤ TCPStore add (toward; client actor hosted)"},
      {"seq", 1, "median_us", "muster:tryget", "tcpstore:get", true, 1,
       "TryGet median ≤ TCPStore get (plain client actor)"},
      {"seq", 1, "median_us", "muster:agent", "tcpstore:get", true, 1,
       "TryGet median ≤ TCPStore get (through muster::Agent)"},
      {"seq", 1, "median_us", "muster:agent@tls", "muster:agent", true, 1.5,
       "TryGet through muster::Agent over mutual TLS ≤ 1.5× plain TCP"},
      {"seq", 1, "median_us", "muster:agent@tls-token", "muster:agent@tls", true, 1.3,
       "TryGet over mutual TLS with the job token ≤ 1.3× TLS alone (the gate's hop; no reply "
       "waits)"},
      {"seq", 1, "p99_us", "muster:tryget-hosted", "muster:tryget-hosted", true, 3,
       "TryGet p99 ≤ 3× its median (client actor hosted)", "median_us"},
      {"seq", 1, "median_us", "muster:tryget-hosted", "muster:floor-hosted", true, 1.5,
       "TryGet median ≤ 1.5× the bare CAF floor (both hosted)"},
      {"conc", 64, "ops_per_s", "muster:hosted", "tcpstore:add", false, 1.5,
       "64 clients ≥ 1.5× TCPStore add (client actors hosted)"},
      {"conc", 64, "ops_per_s", "muster", "tcpstore:add", false, 1.5,
       "64 clients ≥ 1.5× TCPStore add (plain client actors)"},
      {"barrier", 1024, "release_median_us", "muster:combined", "tcpstore", true, 0.1,
       "barrier 1024: last arrival → last release ≤ 0.1× TCPStore (combined per process)"},
      {"barrier", 1024, "round_median_us", "muster:combined", "tcpstore", true, 0.1,
       "barrier 1024: whole round ≤ 0.1× TCPStore (combined per process)"},
      {"barrier", 1024, "release_median_us", "muster", "tcpstore", true, 0.2,
       "barrier 1024: last arrival → last release ≤ 0.2× TCPStore (one call per task)"},
      {"barrier", 1024, "round_median_us", "muster", "tcpstore", true, 0.2,
       "barrier 1024: whole round ≤ 0.2× TCPStore (one call per task)"},
      {"bringup", 1024, "wall_ms", "muster", "tcpstore", true, 0.5,
       "bring-up 1,024 ≤ 0.5× TCPStore connect+add+wait"},
      {"bringup", 10000, "wall_ms", "muster", "", true, 3000, "bring-up 10,000 < 3 s"},
      {"bringup", 100000, "wall_ms", "muster", "", true, 10000,
       "bring-up 100,000 (16 processes) < 10 s"},
      {"failure", 64, "detect_median_ms", "muster", "", true, 10,
       "kill -9 → last of 63 survivors < 10 ms"},
      {"failure", 64, "detect_median_ms", "muster:hosted", "", true, 10,
       "kill -9 → last of 63 survivors < 10 ms (workers' agent actors hosted)"},
      {"heartbeat", 10000, "cpu_pct_median", "muster:batched", "", true, 5,
       "leader CPU < 5% of a core (batched per process)"},
      {"heartbeat", 10000, "cpu_pct_median", "muster", "", true, 5,
       "leader CPU < 5% of a core (one message per task)"},
      {"heartbeat", 10000, "cpu_pct_median", "muster:oneway", "", true, 5,
       "leader CPU < 5% of a core (one one-way message per task, as agents send them)"},
      {"heartbeat", 10000, "cpu_pct_median", "muster:oneway", "muster:floor-oneway", true, 1.5,
       "leader CPU (one-way beats) ≤ 1.5× the bare CAF floor (one-way, a hosted actor per task)"},
      {"heartbeat", 10000, "cpu_pct_median", "muster", "muster:floor", true, 1.5,
       "leader CPU (one message per task) ≤ 1.5× the bare CAF floor (a hosted actor per task)"},
      {"heartbeat", 10000, "cpu_pct_median", "muster:floor-oneway", "", true, 5,
       "bare CAF floor < 5% of a core (a hosted actor per task, beats one-way, unanswered)"},
      {"heartbeat", 10000, "cpu_pct_median", "muster:keepalive", "", true, 5,
       "leader CPU < 5% of a core (CAF keep-alive frames only, one per task)"},
      {"heartbeat", 10000, "cpu_pct_median", "tcp:oneway", "", true, 5,
       "raw TCP floor < 5% of a core (a one-way frame per connection, one per task)"},
      {"heartbeat", 10000, "heap_per_task_kib", "muster", "muster:floor", true, 1.5,
       "leader heap per task ≤ 1.5× the bare CAF floor (an actor and a proxy per task)"},
      {"heartbeat", 10000, "rss_per_task_kib", "muster:batched", "", true, 2,
       "leader RSS < 2 KiB per registered task (batched)"},
      {"heartbeat", 10000, "rss_per_task_kib", "muster", "", true, 2,
       "leader RSS < 2 KiB per registered task (one message per task)"},
      {"conc", 64, "ops_per_s", "muster:insert-durable", "muster:insert", false, 0.5,
       "64 clients: durable inserts ≥ 0.5× in-memory inserts"},
      {"resume", 64, "resume_ms", "muster", "", true, 1000,
       "leader restart: 64 tasks back < 1 s after the new leader is up"},
      {"resume", 1024, "resume_ms", "muster", "", true, 1000,
       "leader restart: 1,024 tasks back < 1 s after the new leader is up"},
  };
  return targets;
}

const Cell* Find(const Table& table, const std::string& pin, const Target& t,
                 const std::string& series, const std::string& metric) {
  auto it = table.find(Key{pin, t.workload, t.param, metric, series});
  return it == table.end() ? nullptr : &it->second;
}

void PrintTargets(const Table& table, const std::string& pin) {
  std::printf(
      "\n#### Targets — %s\n\n| target | Muster | compared with | ratio | verdict |\n"
      "|---|---|---|---|---|\n",
      pin.c_str());
  for (const Target& t : Targets()) {
    const Cell* mine = Find(table, pin, t, t.series, t.metric);
    const std::string& metric = t.against_metric.empty() ? t.metric : t.against_metric;
    const Cell* other = t.against.empty() ? nullptr : Find(table, pin, t, t.against, metric);
    if (mine == nullptr || (!t.against.empty() && other == nullptr)) continue;
    double value = Summarize(mine->values).median;
    double compared = other ? Summarize(other->values).median : 0;
    double measure = other ? value / compared : value;
    bool met = t.at_most ? measure <= t.limit : measure >= t.limit;
    std::string verdict =
        met ? "met"
            : "missed by " + Format(t.at_most ? measure / t.limit : t.limit / measure) + "×";
    std::printf("| %s | %s %s | %s | %s | %s |\n", t.text.c_str(), Format(value).c_str(),
                mine->unit.c_str(), other ? (t.against + " " + Format(compared)).c_str() : "–",
                other ? (Format(measure) + "×").c_str() : "–", verdict.c_str());
  }
}

void WriteCsv(const Table& table, const std::string& path, const std::string& machine) {
  std::ofstream out(path);
  out << "pin,workload,param,metric,series,median,min,max,runs,unit,machine\n";
  for (const auto& [key, cell] : table) {
    Summary s = Summarize(cell.values);
    out << key.pin << ',' << key.workload << ',' << key.param << ',' << key.metric << ','
        << key.series << ',' << s.median << ',' << s.min << ',' << s.max << ',' << s.count << ','
        << cell.unit << ',' << machine << '\n';
  }
}

}  // namespace
}  // namespace muster::bench

int main(int argc, char** argv) {
  using namespace muster::bench;
  Flags flags(argc, argv);
  Table table = Load(flags.Get("raw", "bench/results/raw.csv"));
  if (table.empty()) {
    std::fprintf(stderr, "bench_report: no rows in %s\n", flags.Get("raw").c_str());
    return 1;
  }
  std::string machine = flags.Get("machine", "unknown machine");
  std::printf("### Results (%s)\n\nEach cell: median over runs [min–max].\n", machine.c_str());
  std::set<std::string> pins;
  for (const auto& [key, cell] : table) pins.insert(key.pin);
  for (const auto& pin : pins) PrintTargets(table, pin);
  PrintWorkloadTables(table);
  if (flags.Has("csv")) WriteCsv(table, flags.Get("csv"), machine);
  return 0;
}
