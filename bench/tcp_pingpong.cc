// The raw TCP floor: length-prefixed 64-byte frames with TCP_NODELAY between client processes
// and a one-thread epoll server (tcp_server.cc), run through the same workloads as Muster.
//
// Run:  ./build/bench/tcp_pingpong --workload=seq
//       ./build/bench/tcp_pingpong --workload=conc --param=16      (16 concurrent clients)
//       ./build/bench/tcp_pingpong --workload=barrier --param=1024 (1024 tasks, 4 processes)
// Prints CSV rows system,variant,workload,param,metric,value,unit (driver.h).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>
#include <cerrno>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "muster/bench/driver.h"
#include "muster/bench/harness.h"
#include "muster/bench/stats.h"
#include "muster/bench/tcp_wire.h"

namespace muster::bench {

int TcpConnect(int port, bool nonblocking) {
  int fd = socket(AF_INET, SOCK_STREAM | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  if (rc != 0 && !(nonblocking && errno == EINPROGRESS)) {
    close(fd);
    return -1;
  }
  return fd;
}

bool TcpSend(int fd, const TcpFrame& frame) {
  return write(fd, &frame, sizeof frame) == static_cast<ssize_t>(sizeof frame);
}

bool TcpReceive(int fd, TcpFrame* frame) {
  auto* bytes = reinterpret_cast<char*>(frame);
  size_t got = 0;
  while (got < sizeof *frame) {
    ssize_t n = read(fd, bytes + got, sizeof *frame - got);
    if (n <= 0 && !(n < 0 && errno == EINTR)) return false;
    if (n > 0) got += static_cast<size_t>(n);
  }
  return true;
}

namespace {

bool EchoOnce(int fd) {
  TcpFrame frame;
  return TcpSend(fd, frame) && TcpReceive(fd, &frame);
}

int Seq(const ClientArgs& args) {
  int fd = TcpConnect(args.port);
  if (fd < 0) return 1;
  Emit("ready");
  WaitForGo();
  for (int64_t i = 0; i < args.warmup; ++i) EchoOnce(fd);
  std::vector<double> us;
  us.reserve(static_cast<size_t>(args.ops));
  for (int64_t i = 0; i < args.ops; ++i) {
    int64_t start = MonoNs();
    if (!EchoOnce(fd)) return 1;
    us.push_back((MonoNs() - start) / 1e3);
  }
  EmitSeqResult(us);
  return 0;
}

// Count() threads, one connection each, echo back to back for duration_ms.
int Conc(const ClientArgs& args) {
  std::vector<int> fds;
  for (int64_t i = 0; i < args.Count(); ++i) fds.push_back(TcpConnect(args.port));
  Emit("ready");
  WaitForGo();
  int64_t start = MonoNs(), end = start + args.duration_ms * 1'000'000;
  std::vector<int64_t> ops(fds.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < fds.size(); ++i) {
    threads.emplace_back([&, i] {
      while (MonoNs() < end && EchoOnce(fds[i])) ++ops[i];
    });
  }
  for (auto& thread : threads) thread.join();
  int64_t total = 0;
  for (int64_t n : ops) total += n;
  Emit("result",
       "ops=" + std::to_string(total) + " elapsed_ns=" + std::to_string(MonoNs() - start));
  return 0;
}

}  // namespace

int RunTcpMulti(const ClientArgs& args);  // tcp_multi.cc: barrier, bringup, heartbeat

namespace {

int Failure(const ClientArgs& args) {
  int fd = TcpConnect(args.port);
  TcpFrame frame;
  frame.op = kWatch;
  if (fd < 0 || !TcpSend(fd, frame) || !TcpReceive(fd, &frame)) return 1;
  Emit("ready");
  while (TcpReceive(fd, &frame)) {
    if (frame.op == kNotify) {
      Emit("report", "at_ns=" + std::to_string(MonoNs()));
      WaitForGo();  // stays connected until the driver ends the trial, as Muster's survivors do
      return 0;
    }
  }
  return 1;
}

int RunChild(const Flags& flags) {
  BecomeChild(flags.Int("deadline_s", 120));
  if (flags.Get("role") == "server") return RunTcpServer(flags.Get("workload") == "heartbeat");
  ClientArgs args = ParseClientArgs(flags);
  if (args.workload == "seq") return Seq(args);
  if (args.workload == "conc") return Conc(args);
  if (args.workload == "failure") return Failure(args);
  return RunTcpMulti(args);
}

}  // namespace
}  // namespace muster::bench

int main(int argc, char** argv) {
  muster::bench::Flags flags(argc, argv);
  if (flags.Has("role")) return muster::bench::RunChild(flags);  // one process, by hand
  return muster::bench::RunDriver(flags, "tcp", &muster::bench::RunChild);
}
