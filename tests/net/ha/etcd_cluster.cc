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

#include <absl/strings/match.h>
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

std::string Url(const std::string& host, int port, bool tls = false) {
  return absl::StrCat(tls ? "https://" : "http://", host, ":", port);
}

// Runs `argv` and waits for it; its output on failure.
absl::Status Run(const std::vector<std::string>& argv) {
  auto process = Subprocess::Start(argv);
  if (!process.ok()) return process.status();
  absl::StatusOr<int> code = (*process)->Wait(absl::Seconds(20));
  if (code.ok() && *code == 0) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(absl::StrJoin(argv, " "), " failed: ", (*process)->output()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::Launch(std::vector<Member> members,
                                                                 Placement placement, bool tls,
                                                                 absl::Duration token_ttl) {
  if (access("/usr/bin/etcd", X_OK) != 0 || access("/usr/bin/etcdctl", X_OK) != 0) {
    return absl::UnavailableError("/usr/bin/etcd is missing: run tools/install-deps.sh");
  }
  auto cluster = std::unique_ptr<EtcdCluster>(new EtcdCluster());
  std::string pattern = (std::filesystem::temp_directory_path() / "muster-etcd-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  cluster->dir_ = pattern;
  cluster->token_ttl_ = token_ttl;
  if (tls) {
    cluster->security_ = {.tls = true,
                          .ca_file = cluster->dir_ + "/ca.pem",
                          .cert_file = cluster->dir_ + "/client.pem",
                          .key_file = cluster->dir_ + "/client.key"};
    if (absl::Status made = cluster->MakeCertificates(); !made.ok()) return made;
  }
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
  return StartSecure(members, false, {}, timeout, /*tls=*/false);
}

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::StartSecure(int members, bool user,
                                                                      absl::Duration token_ttl,
                                                                      absl::Duration timeout) {
  return StartSecure(members, user, token_ttl, timeout, /*tls=*/true);
}

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::StartSecure(int members, bool user,
                                                                      absl::Duration token_ttl,
                                                                      absl::Duration timeout,
                                                                      bool tls) {
  // The ports were free when chosen; another process may take one before its member binds it
  // (the kernel hands free ports to outgoing connections too): then new ports, twice at most.
  for (int attempt = 1;; ++attempt) {
    auto cluster = StartOnFreePorts(members, user, token_ttl, timeout, tls);
    if (cluster.ok() || attempt == 3 ||
        !absl::StrContains(cluster.status().message(), "address already in use")) {
      return cluster;
    }
  }
}

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::StartOnFreePorts(int members, bool user,
                                                                           absl::Duration token_ttl,
                                                                           absl::Duration timeout,
                                                                           bool tls) {
  const std::vector<int> ports = FreePorts(2 * members);
  std::vector<Member> all;
  for (int i = 0; i < members; ++i) {
    all.push_back(
        {.name = absl::StrCat("m", i), .client_port = ports[2 * i], .peer_port = ports[2 * i + 1]});
  }
  auto cluster = Launch(std::move(all), {}, tls, token_ttl);
  if (!cluster.ok()) return cluster.status();
  // Formed: a linearizable read goes through the cluster's leader.
  absl::StatusOr<std::vector<std::string>> endpoints = ParseEtcdEndpoints((*cluster)->endpoints());
  if (!endpoints.ok()) return endpoints.status();
  auto client = EtcdClient::Connect({.endpoints = *std::move(endpoints),
                                     .member = NewEtcdGrpcMember,
                                     .security = (*cluster)->security_},
                                    timeout);
  if (!client.ok()) {
    return absl::UnavailableError(
        absl::StrCat(client.status().message(), "\n", (*cluster)->LogTails()));
  }
  etcdserverpb::RangeRequest read;
  read.set_key("muster-test/formed");
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status last;
  while (absl::Now() < deadline) {
    auto answer = (*client)->Range(read, absl::Seconds(1));
    if (answer.ok()) {
      if (user) {
        // etcd's authentication needs its root user first.
        if (absl::Status added = (*cluster)->Etcdctl(
                {"user", "add", absl::StrCat("root:", kPassword), "--interactive=false"});
            !added.ok()) {
          return added;
        }
        if (absl::Status on = (*cluster)->Etcdctl({"auth", "enable"}); !on.ok()) return on;
        (*cluster)->security_.user = "root";
        (*cluster)->security_.password = kPassword;
      }
      return cluster;
    }
    last = answer.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::UnavailableError(absl::StrCat("the etcd cluster did not form within ",
                                             absl::FormatDuration(timeout), ": ", last.message(),
                                             "\n", (*cluster)->LogTails()));
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
                                             LogTails()));
}

absl::Status EtcdCluster::MakeCertificates() {
  const std::string ca = dir_ + "/ca";
  if (absl::Status made = Run({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                               "ec_paramgen_curve:P-256", "-nodes", "-keyout", ca + ".key", "-out",
                               ca + ".pem", "-days", "2", "-subj", "/CN=muster-test-etcd-ca"});
      !made.ok()) {
    return made;
  }
  // The members' certificate names the address they serve on; the client's is for clients.
  for (const auto& [name, usage] :
       {std::pair<std::string, std::string>{"server", "serverAuth,clientAuth"},
        {"client", "clientAuth"}}) {
    const std::string base = absl::StrCat(dir_, "/", name);
    {
      std::ofstream ext(base + ".ext");
      ext << "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=" << usage << "\n";
    }
    if (absl::Status made =
            Run({"/usr/bin/openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-nodes", "-keyout", base + ".key", "-out", base + ".csr", "-subj",
                 // No CN for the client: with authentication on, etcd refuses
                 // a gateway request whose certificate has one.
                 name == "client" ? "/O=muster-test-client" : "/CN=muster-test-server"});
        !made.ok()) {
      return made;
    }
    if (absl::Status made = Run({"/usr/bin/openssl", "x509", "-req", "-in", base + ".csr", "-CA",
                                 ca + ".pem", "-CAkey", ca + ".key", "-CAcreateserial", "-out",
                                 base + ".pem", "-days", "2", "-extfile", base + ".ext"});
        !made.ok()) {
      return made;
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> EtcdCluster::EtcdctlSecurityFlags() const {
  if (!security_.tls) return {};
  return {"--cacert=" + security_.ca_file, "--cert=" + security_.cert_file,
          "--key=" + security_.key_file};
}

absl::Status EtcdCluster::Etcdctl(std::vector<std::string> args) const {
  std::vector<std::string> argv = {"/usr/bin/etcdctl", "--endpoints=" + endpoints(),
                                   "--dial-timeout=2s", "--command-timeout=5s"};
  for (std::string& flag : EtcdctlSecurityFlags()) argv.push_back(std::move(flag));
  if (security_.auth()) argv.push_back(absl::StrCat("--user=root:", kPassword));
  for (std::string& arg : args) argv.push_back(std::move(arg));
  return Run(argv);
}

absl::Status EtcdCluster::Launch(int i) {
  Member& member = members_[i];
  std::string data = absl::StrCat(dir_, "/", member.name);
  const bool tls = security_.tls;
  std::vector<std::string> args = {
      "/usr/bin/etcd", "--name", member.name, "--data-dir", data, "--listen-client-urls",
      Url(member.host, member.client_port, tls), "--advertise-client-urls",
      Url(member.host, member.client_port, tls), "--listen-peer-urls",
      Url(member.host, member.peer_port), "--initial-advertise-peer-urls",
      Url(member.host, member.peer_port), "--initial-cluster", initial_cluster_,
      "--initial-cluster-state", "new", "--initial-cluster-token",
      absl::StrCat("muster-test-", getpid()),
      // Elections in half a second, as on a LAN; the default assumes a WAN.
      "--heartbeat-interval", "50", "--election-timeout", "500", "--logger", "zap"};
  if (tls) {
    for (const std::string& arg :
         {"--cert-file=" + dir_ + "/server.pem", "--key-file=" + dir_ + "/server.key",
          "--trusted-ca-file=" + dir_ + "/ca.pem", std::string("--client-cert-auth")}) {
      args.push_back(arg);
    }
  }
  if (token_ttl_ > absl::ZeroDuration()) {
    args.push_back(absl::StrCat("--auth-token=simple"));
    args.push_back(absl::StrCat("--auth-token-ttl=", absl::ToInt64Seconds(token_ttl_)));
  }
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
  for (size_t i = 0; i < members_.size(); ++i) {
    all.push_back(absl::StrCat(security_.tls ? "https://" : "", endpoint(static_cast<int>(i))));
  }
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
  return EtcdClient::Connect(
      {.endpoints = *std::move(endpoints), .member = std::move(member), .security = security_});
}

std::string EtcdCluster::LogTails() const {
  std::string all;
  for (size_t i = 0; i < members_.size(); ++i) {
    absl::StrAppend(&all, "--- ", members_[i].name, "'s log:\n", LogTail(static_cast<int>(i)),
                    "\n");
  }
  return all;
}

std::string EtcdCluster::LogTail(int member) const {
  std::ifstream log(absl::StrCat(dir_, "/", members_[member].name, ".log"));
  std::stringstream text;
  text << log.rdbuf();
  std::string all = text.str();
  return all.size() > 3000 ? all.substr(all.size() - 3000) : all;
}

}  // namespace muster::testing
