// The raw TCP floor's many-task clients: one thread drives many connections (one per task)
// through epoll, for the barrier, bring-up and heartbeat workloads of tcp_pingpong.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "muster/bench/driver.h"
#include "muster/bench/harness.h"
#include "muster/bench/tcp_wire.h"

namespace muster::bench {
namespace {

// Connections of one client process, all watched by one epoll instance.
class Multi {
 public:
  Multi() : epoll_(epoll_create1(0)) {}
  void Add(int fd, uint32_t events) {
    epoll_event event{events, {.fd = fd}};
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event);
    buffers_[fd];
  }
  void Modify(int fd, uint32_t events) {
    epoll_event event{events, {.fd = fd}};
    epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &event);
  }
  // Waits up to `timeout_ms` and calls on_frame(fd, frame) / on_writable(fd).
  template <class OnFrame, class OnWritable>
  void Poll(int timeout_ms, OnFrame on_frame, OnWritable on_writable) {
    epoll_event events[256];
    int n = epoll_wait(epoll_, events, 256, timeout_ms);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (events[i].events & EPOLLOUT) on_writable(fd);
      if (events[i].events & EPOLLIN) ReadFrames(fd, on_frame);
    }
  }

 private:
  template <class OnFrame>
  void ReadFrames(int fd, OnFrame& on_frame) {
    std::string& in = buffers_[fd];
    char chunk[4096];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) > 0) in.append(chunk, static_cast<size_t>(n));
    size_t used = 0;
    for (; in.size() - used >= sizeof(TcpFrame); used += sizeof(TcpFrame)) {
      TcpFrame frame;
      std::memcpy(&frame, in.data() + used, sizeof frame);
      on_frame(fd, frame);
    }
    in.erase(0, used);
  }

  int epoll_;
  std::unordered_map<int, std::string> buffers_;
};

TcpFrame BarrierFrame(int64_t participants, int64_t round) {
  TcpFrame frame;
  frame.op = kBarrier;
  frame.a = static_cast<uint32_t>(participants);
  frame.b = static_cast<uint32_t>(round);
  return frame;
}

std::vector<int> ConnectAll(const ClientArgs& args, Multi* multi) {
  std::vector<int> fds;
  for (int64_t i = 0; i < args.Count(); ++i) {
    int fd = TcpConnect(args.port);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    multi->Add(fd, EPOLLIN);
    fds.push_back(fd);
  }
  return fds;
}

struct Round {
  int64_t first = INT64_MAX, last = 0, release = 0;
};

// Every task re-enters the barrier as soon as it is released, like an agent's loop.
int Barrier(const ClientArgs& args) {
  Multi multi;
  std::vector<int> fds = ConnectAll(args, &multi);
  std::vector<Round> rounds(static_cast<size_t>(args.rounds));
  auto enter = [&](int fd, int64_t r) {
    int64_t now = MonoNs();
    rounds[r].first = std::min(rounds[r].first, now);
    rounds[r].last = std::max(rounds[r].last, now);
    TcpSend(fd, BarrierFrame(args.param, r));
  };
  Emit("ready");
  WaitForGo();
  for (int fd : fds) enter(fd, 0);
  int64_t finished = 0;
  while (finished < static_cast<int64_t>(fds.size())) {
    multi.Poll(
        1000,
        [&](int fd, const TcpFrame& frame) {
          rounds[frame.b].release = MonoNs();
          if (frame.b + 1 < args.rounds) {
            enter(fd, frame.b + 1);
          } else {
            ++finished;
          }
        },
        [](int) {});
  }
  for (size_t r = 0; r < rounds.size(); ++r) {
    Emit("round", "r=" + std::to_string(r) + " first=" + std::to_string(rounds[r].first) +
                      " last=" + std::to_string(rounds[r].last) +
                      " release=" + std::to_string(rounds[r].release));
  }
  Emit("done");
  return 0;
}

// Each task connects, sends one barrier frame for all tasks, and waits for the release.
int Bringup(const ClientArgs& args) {
  Emit("ready");
  WaitForGo();
  Multi multi;
  for (int64_t i = 0; i < args.Count(); ++i) {
    int fd = TcpConnect(args.port, /*nonblocking=*/true);
    if (fd < 0) return 1;
    multi.Add(fd, EPOLLOUT | EPOLLIN);
  }
  int64_t released = 0;
  while (released < args.Count()) {
    multi.Poll(
        1000, [&](int, const TcpFrame&) { ++released; },
        [&](int fd) {
          multi.Modify(fd, EPOLLIN);
          TcpSend(fd, BarrierFrame(args.param, 0));
        });
  }
  Emit("result", "end=" + std::to_string(MonoNs()));
  return 0;
}

// Each connection sends one echo frame per second, phases spread evenly over the second; with
// variant "oneway", a frame the server does not answer (each counts as ok when sent).
int Heartbeat(const ClientArgs& args) {
  bool oneway = args.variant == "oneway";
  TcpFrame beat;
  if (oneway) beat.op = kBeat;
  Multi multi;
  std::vector<int> fds = ConnectAll(args, &multi);
  Emit("ready");
  WaitForGo();
  int64_t start = MonoNs(), end = start + args.duration_ms * 1'000'000;
  int64_t sent = 0, ok = 0;
  auto due = [&](int64_t k) {
    return start + k * 1'000'000'000 / static_cast<int64_t>(fds.size());
  };
  while (MonoNs() < end) {
    for (int64_t now = MonoNs(); due(sent) <= now; ++sent) {
      ok += TcpSend(fds[sent % fds.size()], beat) && oneway;
    }
    int wait_ms = static_cast<int>(std::max<int64_t>(0, (due(sent) - MonoNs()) / 1'000'000));
    multi.Poll(
        wait_ms, [&](int, const TcpFrame&) { ++ok; }, [](int) {});
  }
  Emit("result", "ok=" + std::to_string(ok) + " errors=" + std::to_string(sent - ok));
  return 0;
}

}  // namespace

int RunTcpMulti(const ClientArgs& args) {
  if (args.workload == "barrier") return Barrier(args);
  if (args.workload == "bringup") return Bringup(args);
  if (args.workload == "heartbeat") return Heartbeat(args);
  std::fprintf(stderr, "tcp_pingpong: unknown workload %s\n", args.workload.c_str());
  return 2;
}

}  // namespace muster::bench
