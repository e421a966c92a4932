#include "tests/net/ha/etcd_cluster.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>

namespace muster::testing {
namespace {

// `count` distinct ports nobody listens on now (the kernel's picks for sockets bound to port 0,
// all held until every one is picked).
std::vector<int> FreePorts(int count) {
  std::vector<int> fds, ports;
  for (int i = 0; i < count; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    int port = 0;
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    fds.push_back(fd);
    ports.push_back(port);
  }
  for (int fd : fds) close(fd);
  return ports;
}

std::string Url(const std::string& host, int port) {
  return absl::StrCat("http://", host, ":", port);
}

}  // namespace

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::Launch(std::vector<Member> members,
                                                                 Placement placement) {
  if (access("/usr/bin/etcd", X_OK) != 0 || access("/usr/bin/etcdctl", X_OK) != 0) {
    return absl::UnavailableError("/usr/bin/etcd is missing: run tools/install-deps.sh");
  }
  auto cluster = std::unique_ptr<EtcdCluster>(new EtcdCluster());
  std::string pattern = (std::filesystem::temp_directory_path() / "muster-etcd-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  cluster->dir_ = pattern;
  std::vector<std::string> peers;
  for (const Member& member : members) {
    peers.push_back(absl::StrCat(member.name, "=", Url(member.host, member.peer_port)));
  }
  cluster->initial_cluster_ = absl::StrJoin(peers, ",");
  cluster->members_ = std::move(members);
  cluster->placement_ = std::move(placement);
  for (size_t i = 0; i < cluster->members_.size(); ++i) {
    if (absl::Status launched = cluster->Launch(static_cast<int>(i)); !launched.ok()) {
      return launched;
    }
  }
  return cluster;
}

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::Start(int members,
                                                                absl::Duration timeout) {
  const std::vector<int> ports = FreePorts(2 * members);
  std::vector<Member> all;
  for (int i = 0; i < members; ++i) {
    all.push_back(
        {.name = absl::StrCat("m", i), .client_port = ports[2 * i], .peer_port = ports[2 * i + 1]});
  }
  auto cluster = Launch(std::move(all), {});
  if (!cluster.ok()) return cluster.status();
  // Formed: a linearizable read goes through the cluster's leader.
  absl::StatusOr<std::vector<std::string>> endpoints = ParseEtcdEndpoints((*cluster)->endpoints());
  if (!endpoints.ok()) return endpoints.status();
  auto client = EtcdClient::Connect(
      {.endpoints = *std::move(endpoints), .member = NewEtcdGrpcMember}, timeout);
  if (!client.ok()) {
    return absl::UnavailableError(
        absl::StrCat(client.status().message(), "\n", (*cluster)->LogTail(0)));
  }
  etcdserverpb::RangeRequest read;
  read.set_key("muster-test/formed");
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status last;
  while (absl::Now() < deadline) {
    auto answer = (*client)->Range(read, absl::Seconds(1));
    if (answer.ok()) return cluster;
    last = answer.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::UnavailableError(absl::StrCat("the etcd cluster did not form within ",
                                             absl::FormatDuration(timeout), ": ", last.message(),
                                             "\n", (*cluster)->LogTail(0)));
}

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::StartOn(Placement placement,
                                                                  absl::Duration timeout) {
  std::vector<Member> members;
  for (size_t i = 0; i < placement.hosts.size(); ++i) {
    members.push_back({.name = absl::StrCat("m", i),
                       .host = placement.hosts[i],
                       .client_port = 2379,
                       .peer_port = 2380});
  }
  auto cluster = Launch(std::move(members), std::move(placement));
  if (!cluster.ok()) return cluster.status();
  if (absl::Status formed = (*cluster)->WaitFormed(timeout); !formed.ok()) return formed;
  return cluster;
}

absl::Status EtcdCluster::WaitFormed(absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  std::string last;
  while (absl::Now() < deadline) {
    auto put = Subprocess::Start(
        placement_.in(0, {"/usr/bin/etcdctl", "--endpoints=" + endpoints(), "--dial-timeout=1s",
                          "--command-timeout=1s", "put", "muster-test/formed", "1"}));
    if (!put.ok()) return put.status();
    absl::StatusOr<int> code = (*put)->Wait(absl::Seconds(5));
    if (code.ok() && *code == 0) return absl::OkStatus();
    last = (*put)->output();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::UnavailableError(absl::StrCat("the etcd cluster did not form within ",
                                             absl::FormatDuration(timeout), ": ", last, "\n",
                                             LogTail(0)));
}

absl::Status EtcdCluster::Launch(int i) {
  Member& member = members_[i];
  std::string data = absl::StrCat(dir_, "/", member.name);
  std::vector<std::string> args = {
      "/usr/bin/etcd", "--name", member.name, "--data-dir", data, "--listen-client-urls",
      Url(member.host, member.client_port), "--advertise-client-urls",
      Url(member.host, member.client_port), "--listen-peer-urls",
      Url(member.host, member.peer_port), "--initial-advertise-peer-urls",
      Url(member.host, member.peer_port), "--initial-cluster", initial_cluster_,
      "--initial-cluster-state", "new", "--initial-cluster-token",
      absl::StrCat("muster-test-", getpid()),
      // Elections in half a second, as on a LAN; the default assumes a WAN.
      "--heartbeat-interval", "50", "--election-timeout", "500", "--logger", "zap"};
  // Everything etcd prints goes to its log file: a pipe that nobody reads would fill up and
  // stop etcd (it logs each failed connection to a peer that is not up yet).
  std::string command = "exec";
  for (const std::string& arg : args) absl::StrAppend(&command, " '", arg, "'");
  absl::StrAppend(&command, " >>'", data, ".log' 2>&1");
  std::vector<std::string> argv = {"/bin/sh", "-c", command};
  if (placement_.in) argv = placement_.in(i, std::move(argv));
  auto process = Subprocess::Start(argv);
  if (!process.ok()) return process.status();
  member.process = *std::move(process);
  return absl::OkStatus();
}

EtcdCluster::~EtcdCluster() {
  for (Member& member : members_) member.process.reset();  // kills and reaps
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

std::string EtcdCluster::endpoint(int member) const {
  return absl::StrCat(members_[member].host, ":", members_[member].client_port);
}

std::string EtcdCluster::endpoints() const {
  std::vector<std::string> all;
  for (size_t i = 0; i < members_.size(); ++i) all.push_back(endpoint(static_cast<int>(i)));
  return absl::StrJoin(all, ",");
}

int EtcdCluster::Follower() const {
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!members_[i].process) continue;
    std::vector<std::string> argv = {"/usr/bin/etcdctl",
                                     "--endpoints=" + endpoint(static_cast<int>(i)),
                                     "--dial-timeout=1s",
                                     "endpoint",
                                     "status",
                                     "-w",
                                     "json"};
    if (placement_.in) argv = placement_.in(0, std::move(argv));
    auto status = Subprocess::Start(argv);
    if (!status.ok() || (*status)->Wait(absl::Seconds(5)).value_or(-1) != 0) continue;
    // [{"Endpoint":"...","Status":{"header":{...,"member_id":M,...},...,"leader":L,...}}]
    const std::string& out = (*status)->output();
    auto number = [&](const std::string& name) {
      size_t at = out.find("\"" + name + "\":");
      return at == std::string::npos
                 ? std::string()
                 : out.substr(at + name.size() + 3,
                              out.find_first_not_of("0123456789", at + name.size() + 3) -
                                  (at + name.size() + 3));
    };
    const std::string member = number("member_id"), leader = number("leader");
    if (!member.empty() && !leader.empty() && member != leader) return static_cast<int>(i);
  }
  return -1;
}

void EtcdCluster::Kill(int member) {
  if (!members_[member].process) return;
  members_[member].process->Signal(SIGKILL);
  (void)members_[member].process->Wait(absl::Seconds(10));
  members_[member].process.reset();
}

absl::Status EtcdCluster::Restart(int member) { return Launch(member); }

absl::StatusOr<std::shared_ptr<EtcdClient>> EtcdCluster::Client(EtcdMemberFactory member) const {
  absl::StatusOr<std::vector<std::string>> endpoints = ParseEtcdEndpoints(this->endpoints());
  if (!endpoints.ok()) return endpoints.status();
  return EtcdClient::Connect({.endpoints = *std::move(endpoints), .member = std::move(member)});
}

std::string EtcdCluster::LogTail(int member) const {
  std::ifstream log(absl::StrCat(dir_, "/", members_[member].name, ".log"));
  std::stringstream text;
  text << log.rdbuf();
  std::string all = text.str();
  return all.size() > 3000 ? all.substr(all.size() - 3000) : all;
}

}  // namespace muster::testing
