#include "tests/netbed/net_bed.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>

#include "muster/tools/run/subprocess.h"

namespace muster::netbed {
namespace {

constexpr char kIp[] = "/usr/sbin/ip";
constexpr char kNft[] = "/usr/sbin/nft";
constexpr char kPrefix[] = "mnb";  // muster net bed: mnb<pid>h<i>, mnb<pid>sw

// Runs a command to completion (10 s at most); Internal with its output when it fails.
absl::StatusOr<std::string> Run(std::vector<std::string> argv) {
  const std::string text = absl::StrJoin(argv, " ");
  auto process = Subprocess::Start(std::move(argv));
  if (!process.ok())
    return absl::InternalError(absl::StrCat(text, ": ", process.status().message()));
  auto code = (*process)->Wait(absl::Seconds(10));
  if (!code.ok() || *code != 0) {
    return absl::InternalError(
        absl::StrCat(text, " failed (", code.ok() ? *code : -1, "): ", (*process)->output()));
  }
  return (*process)->output();
}

bool Alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// Deletes namespaces of beds whose test process is gone (a bed whose watchdog was killed too).
void SweepStale() {
  auto list = Run({kIp, "netns", "list"});
  if (!list.ok()) return;
  for (absl::string_view line : absl::StrSplit(*list, '\n', absl::SkipEmpty())) {
    std::string name(line.substr(0, line.find(' ')));
    if (name.rfind(kPrefix, 0) != 0) continue;
    size_t end = name.find_first_not_of("0123456789", 3);
    int pid = 0;
    if (end == std::string::npos || !absl::SimpleAtoi(name.substr(3, end - 3), &pid)) continue;
    if (pid > 0 && Alive(pid)) continue;
    (void)Run({"/bin/sh", "-c", absl::StrCat(kIp, " netns pids ", name, " | xargs -r kill -9")});
    (void)Run({kIp, "netns", "del", name});
  }
}

}  // namespace

std::string NetBed::Unavailable() {
  if (::geteuid() != 0) return "the network test bed needs root (CAP_NET_ADMIN): run as root";
  if (::access(kIp, X_OK) != 0 || ::access(kNft, X_OK) != 0) {
    return "the network test bed needs ip and nft: install iproute2 and nftables "
           "(tools/install-deps.sh)";
  }
  const std::string probe = absl::StrCat(kPrefix, ::getpid(), "probe");
  auto made = Run({kIp, "netns", "add", probe});
  if (!made.ok()) {
    return absl::StrCat("cannot create a network namespace here: ", made.status().message());
  }
  auto table = Run({kIp, "netns", "exec", probe, kNft, "add", "table", "inet", "probe"});
  (void)Run({kIp, "netns", "del", probe});
  if (!table.ok()) return absl::StrCat("nftables does not work here: ", table.status().message());
  return {};
}

NetBed::NetBed(int hosts, std::string prefix)
    : hosts_(hosts), prefix_(std::move(prefix)), loss_(hosts, 0) {
  for (int i = 0; i < hosts; ++i) names_.push_back(absl::StrCat(prefix_, "h", i));
  switch_ = prefix_ + "sw";
}

absl::StatusOr<std::unique_ptr<NetBed>> NetBed::Create(int hosts) {
  if (hosts < 1 || hosts > 200) return absl::InvalidArgumentError("1 to 200 hosts");
  if (std::string why = Unavailable(); !why.empty()) return absl::FailedPreconditionError(why);
  SweepStale();
  static int beds = 0;  // several beds of one process, one after another or at once
  std::unique_ptr<NetBed> bed(new NetBed(hosts, absl::StrCat(kPrefix, ::getpid(), "b", beds++)));
  if (absl::Status built = bed->Build(); !built.ok()) return built;  // the destructor cleans
  return bed;
}

absl::Status NetBed::Build() {
  // The watchdog first: whatever is made below is removed if this process dies.
  std::vector<std::string> all = names_;
  all.push_back(switch_);
  const std::string script = absl::StrCat(
      "while kill -0 ", ::getpid(), " 2>/dev/null; do sleep 0.5; done; for ns in ",
      absl::StrJoin(all, " "), "; do ", kIp, " netns pids $ns 2>/dev/null | xargs -r kill -9; ",
      kIp, " netns del $ns 2>/dev/null; done");
  pid_t child = ::fork();
  if (child < 0) return absl::InternalError("cannot fork the bed's watchdog");
  if (child == 0) {
    ::setsid();
    int null = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  watchdog_ = child;
  std::vector<std::vector<std::string>> steps = {
      {kIp, "netns", "add", switch_},
      {kIp, "-n", switch_, "link", "add", "br0", "type", "bridge"},
      {kIp, "-n", switch_, "link", "set", "br0", "up"},
  };
  for (int i = 0; i < hosts_; ++i) {
    const std::string port = absl::StrCat("h", i);
    steps.push_back({kIp, "netns", "add", names_[i]});
    steps.push_back({kIp, "link", "add", "eth0", "netns", names_[i], "type", "veth", "peer", "name",
                     port, "netns", switch_});
    steps.push_back({kIp, "-n", switch_, "link", "set", port, "master", "br0", "up"});
    steps.push_back({kIp, "-n", names_[i], "addr", "add", Address(i) + "/24", "dev", "eth0"});
    steps.push_back({kIp, "-n", names_[i], "link", "set", "eth0", "up"});
    steps.push_back({kIp, "-n", names_[i], "link", "set", "lo", "up"});
  }
  for (auto& step : steps) {
    if (auto done = Run(std::move(step)); !done.ok()) return done.status();
  }
  for (int i = 0; i < hosts_; ++i) {
    if (absl::Status applied = Apply(i); !applied.ok()) return applied;
  }
  return absl::OkStatus();
}

NetBed::~NetBed() { TearDown(); }

void NetBed::TearDown() {
  if (torn_down_) return;
  torn_down_ = true;
  if (watchdog_ > 0) {
    ::kill(watchdog_, SIGKILL);
    ::waitpid(watchdog_, nullptr, 0);
  }
  std::vector<std::string> all = names_;
  all.push_back(switch_);
  for (const std::string& name : all) {
    (void)Run({"/bin/sh", "-c",
               absl::StrCat(kIp, " netns pids ", name, " 2>/dev/null | xargs -r kill -9")});
    (void)Run({kIp, "netns", "del", name});
  }
}

std::string NetBed::Address(int host) { return absl::StrCat("198.18.0.", 10 + host); }

std::vector<std::string> NetBed::In(int host, std::vector<std::string> argv) const {
  argv.insert(argv.begin(), {kIp, "netns", "exec", names_[host]});
  return argv;
}

absl::Status NetBed::Apply(int host) {
  std::vector<std::string> to, from;
  for (const auto& [a, b] : blocked_) {
    if (a == host) to.push_back(Address(b));
    if (b == host) from.push_back(Address(a));
  }
  std::string rules = "table inet muster {}\ndelete table inet muster\ntable inet muster {\n";
  absl::StrAppend(&rules,
                  "  chain out {\n    type filter hook output priority 0; policy accept;\n");
  if (!to.empty()) {
    absl::StrAppend(&rules, "    oifname \"eth0\" ip daddr { ", absl::StrJoin(to, ", "),
                    " } drop\n");
  }
  if (loss_[host] > 0) {
    absl::StrAppend(&rules, "    oifname \"eth0\" numgen random mod 100 < ", loss_[host],
                    " drop\n");
  }
  absl::StrAppend(&rules,
                  "  }\n  chain in {\n    type filter hook input priority 0; policy accept;\n");
  if (!from.empty()) {
    absl::StrAppend(&rules, "    iifname \"eth0\" ip saddr { ", absl::StrJoin(from, ", "),
                    " } drop\n");
  }
  absl::StrAppend(&rules, "  }\n}\n");
  const std::string file = absl::StrCat("/tmp/", names_[host], ".nft");
  {
    std::ofstream out(file, std::ios::trunc);
    out << rules;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", file));
  }
  auto applied = Run(In(host, {kNft, "-f", file}));
  std::remove(file.c_str());
  return applied.status();
}

absl::Status NetBed::SetLoss(int host, int percent) {
  if (host < 0 || host >= hosts_ || percent < 0 || percent > 100) {
    return absl::InvalidArgumentError("SetLoss: a host of the bed and 0..100 percent");
  }
  loss_[host] = percent;
  return Apply(host);
}

absl::Status NetBed::Block(int from, int to) {
  if (from < 0 || from >= hosts_ || to < 0 || to >= hosts_ || from == to) {
    return absl::InvalidArgumentError("Block: two different hosts of the bed");
  }
  blocked_.insert({from, to});
  if (absl::Status a = Apply(from); !a.ok()) return a;
  return Apply(to);
}

absl::Status NetBed::Partition(int a, int b) {
  if (absl::Status one = Block(a, b); !one.ok()) return one;
  return Block(b, a);
}

absl::Status NetBed::Isolate(int host) {
  for (int other = 0; other < hosts_; ++other) {
    if (other == host) continue;
    blocked_.insert({host, other});
    blocked_.insert({other, host});
  }
  for (int i = 0; i < hosts_; ++i) {
    if (absl::Status applied = Apply(i); !applied.ok()) return applied;
  }
  return absl::OkStatus();
}

absl::Status NetBed::SetRate(int host, int64_t bytes_per_second) {
  if (host < 0 || host >= hosts_ || bytes_per_second < 0) {
    return absl::InvalidArgumentError("SetRate: a host of the bed and a rate >= 0");
  }
  const std::string port = absl::StrCat("h", host);
  for (auto [ns, dev] : {std::pair{names_[host], std::string("eth0")}, {switch_, port}}) {
    std::vector<std::string> command = {kIp, "netns", "exec", ns, "/usr/sbin/tc", "qdisc"};
    if (bytes_per_second == 0) {
      command.insert(command.end(), {"del", "dev", dev, "root"});
      (void)Run(command);  // none set: nothing to delete
      continue;
    }
    // A burst of at least one MTU-sized packet and 10 ms of the rate; packets queue up to 1 s.
    const int64_t burst = std::max<int64_t>(bytes_per_second / 100, 16 * 1024);
    command.insert(command.end(), {"replace", "dev", dev, "root", "tbf", "rate",
                                   absl::StrCat(bytes_per_second * 8, "bit"), "burst",
                                   absl::StrCat(burst), "latency", "1000ms"});
    if (auto done = Run(command); !done.ok()) return done.status();
  }
  return absl::OkStatus();
}

std::vector<std::string> NetBed::Relay(const std::string& listen, const std::string& to,
                                       int delay_ms, int jitter_ms, int64_t rate) {
  return {"/usr/bin/python3",
          MUSTER_NETBED_RELAY,
          "--listen",
          listen,
          "--to",
          to,
          absl::StrCat("--delay-ms=", delay_ms),
          absl::StrCat("--jitter-ms=", jitter_ms),
          absl::StrCat("--rate-bytes=", rate)};
}

absl::Status NetBed::HealAll() {
  blocked_.clear();
  std::fill(loss_.begin(), loss_.end(), 0);
  for (int i = 0; i < hosts_; ++i) {
    if (absl::Status applied = Apply(i); !applied.ok()) return applied;
  }
  return absl::OkStatus();
}

}  // namespace muster::netbed
