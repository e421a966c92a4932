// The raw TCP floor's server: one thread, epoll, non-blocking sockets. It answers echo frames at
// once, holds barrier frames until every participant of the round arrived, and tells watchers
// when another watcher's connection closes. SIGUSR1 emits a CPU / RSS sample, SIGTERM stops it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "muster/bench/harness.h"
#include "muster/bench/tcp_wire.h"

namespace muster::bench {
namespace {

struct Connection {
  std::string in;
  std::string out;
  bool watcher = false;
};

class TcpServer {
 public:
  bool Listen();
  int port() const { return port_; }
  void Serve();

 private:
  void Accept();
  void Read(int fd);
  void Close(int fd);
  void Handle(int fd, const TcpFrame& frame);
  void Send(int fd, const TcpFrame& frame);
  void Flush(int fd);
  bool OnSignal();

  int listener_ = -1, epoll_ = -1, signals_ = -1, port_ = 0;
  std::unordered_map<int, Connection> connections_;
  std::map<uint32_t, std::vector<int>> barriers_;  // round -> waiting connections
};

bool TcpServer::Listen() {
  listener_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0) return false;
  if (listen(listener_, 4096) != 0) return false;
  getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR1);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signals_ = signalfd(-1, &mask, SFD_NONBLOCK);
  epoll_ = epoll_create1(0);
  for (int fd : {listener_, signals_}) {
    epoll_event event{EPOLLIN, {.fd = fd}};
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event);
  }
  return true;
}

void TcpServer::Serve() {
  std::vector<epoll_event> events(1024);
  while (true) {
    int n = epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), -1);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == listener_) {
        Accept();
      } else if (fd == signals_) {
        if (!OnSignal()) return;
      } else if (events[i].events & EPOLLOUT) {
        Flush(fd);
      } else {
        Read(fd);
      }
    }
  }
}

bool TcpServer::OnSignal() {
  signalfd_siginfo info;
  while (read(signals_, &info, sizeof info) == sizeof info) {
    if (info.ssi_signo == SIGTERM) return false;
    Usage usage = SampleUsage();
    Emit("sample", "mono_ns=" + std::to_string(MonoNs()) + " cpu_ns=" +
                       std::to_string(usage.cpu_ns) + " rss_kib=" + std::to_string(usage.rss_kib) +
                       " heap_kib=" + std::to_string(usage.heap_kib));
  }
  return true;
}

void TcpServer::Accept() {
  while (true) {
    int fd = accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK);
    if (fd < 0) return;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    connections_[fd] = Connection{};
    epoll_event event{EPOLLIN, {.fd = fd}};
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event);
  }
}

void TcpServer::Read(int fd) {
  char chunk[16384];
  while (true) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return Close(fd);
    if (n < 0) break;
    connections_[fd].in.append(chunk, static_cast<size_t>(n));
  }
  std::string& in = connections_[fd].in;
  size_t used = 0;
  while (in.size() - used >= sizeof(TcpFrame)) {
    TcpFrame frame;
    std::memcpy(&frame, in.data() + used, sizeof frame);
    used += sizeof frame;
    Handle(fd, frame);
    if (!connections_.count(fd)) return;
  }
  connections_[fd].in.erase(0, used);
}

void TcpServer::Handle(int fd, const TcpFrame& frame) {
  if (frame.op == kBeat) return;
  if (frame.op == kBarrier) {
    std::vector<int>& waiting = barriers_[frame.b];
    waiting.push_back(fd);
    if (waiting.size() < frame.a) return;
    for (int waiter : waiting) Send(waiter, frame);
    barriers_.erase(frame.b);
    return;
  }
  if (frame.op == kWatch) connections_[fd].watcher = true;
  Send(fd, frame);
}

void TcpServer::Send(int fd, const TcpFrame& frame) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  std::string& out = it->second.out;
  if (out.empty()) {
    ssize_t n = write(fd, &frame, sizeof frame);
    if (n == static_cast<ssize_t>(sizeof frame)) return;
    out.append(reinterpret_cast<const char*>(&frame) + std::max<ssize_t>(n, 0),
               sizeof frame - std::max<ssize_t>(n, 0));
    epoll_event event{EPOLLIN | EPOLLOUT, {.fd = fd}};
    epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &event);
    return;
  }
  out.append(reinterpret_cast<const char*>(&frame), sizeof frame);
}

void TcpServer::Flush(int fd) {
  std::string& out = connections_[fd].out;
  ssize_t n = write(fd, out.data(), out.size());
  if (n > 0) out.erase(0, static_cast<size_t>(n));
  if (!out.empty()) return;
  epoll_event event{EPOLLIN, {.fd = fd}};
  epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &event);
}

void TcpServer::Close(int fd) {
  bool watcher = connections_[fd].watcher;
  connections_.erase(fd);
  close(fd);
  if (!watcher) return;
  TcpFrame notify;
  notify.op = kNotify;
  for (auto& [other, connection] : connections_) {
    if (connection.watcher) Send(other, notify);
  }
}

}  // namespace

int RunTcpServer(bool heartbeat_baseline) {
  TcpServer server;
  if (heartbeat_baseline) {
    Usage usage = SampleUsage();
    Emit("baseline", "rss_kib=" + std::to_string(usage.rss_kib) +
                         " heap_kib=" + std::to_string(usage.heap_kib));
  }
  if (!server.Listen()) {
    std::fprintf(stderr, "tcp server: cannot listen on 127.0.0.1\n");
    return 1;
  }
  Emit("ready", "port=" + std::to_string(server.port()));
  server.Serve();
  return 0;
}

}  // namespace muster::bench
