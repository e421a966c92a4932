#include "muster/bench/harness.h"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

namespace muster::bench {

int64_t MonoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void SleepUntilNs(int64_t when_ns) {
  timespec ts{static_cast<time_t>(when_ns / 1'000'000'000),
              static_cast<long>(when_ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

Flags::Flags(int argc, char** argv) : Flags(std::vector<std::string>(argv + 1, argv + argc)) {}

Flags::Flags(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg.rfind("--", 0) != 0) {
      std::fprintf(stderr, "unexpected argument \"%s\"; flags are --key=value\n", arg.c_str());
      std::exit(2);
    }
    size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      values_[arg.substr(2)] = "true";
    } else {
      values_[arg.substr(2, eq - 2)] = arg.substr(eq + 1);
    }
  }
}

std::string Flags::Get(const std::string& key, const std::string& fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

int64_t Flags::Int(const std::string& key, int64_t fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : std::strtoll(it->second.c_str(), nullptr, 10);
}

int64_t Record::Int(const std::string& key, int64_t fallback) const {
  auto it = fields.find(key);
  return it == fields.end() ? fallback : std::strtoll(it->second.c_str(), nullptr, 10);
}

double Record::Double(const std::string& key, double fallback) const {
  auto it = fields.find(key);
  return it == fields.end() ? fallback : std::strtod(it->second.c_str(), nullptr);
}

void BecomeChild(int64_t deadline_s) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  signal(SIGPIPE, SIG_IGN);
  alarm(static_cast<unsigned>(deadline_s));
}

void Emit(const std::string& kind, const std::string& fields) {
  std::string line = "R " + kind + (fields.empty() ? "" : " " + fields) + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

void WaitForGo() {
  char line[64];
  if (std::fgets(line, sizeof line, stdin) == nullptr) std::_Exit(3);  // the driver went away
}

Usage SampleUsage() {
  Usage usage;
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  auto ns = [](const timeval& tv) {
    return int64_t{tv.tv_sec} * 1'000'000'000 + tv.tv_usec * 1000;
  };
  usage.cpu_ns = ns(ru.ru_utime) + ns(ru.ru_stime);
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) usage.rss_kib = std::strtoll(line.c_str() + 6, nullptr, 10);
  }
  struct mallinfo2 heap = mallinfo2();
  usage.heap_kib = static_cast<int64_t>((heap.uordblks + heap.hblkhd) / 1024);
  return usage;
}

std::unique_ptr<Child> Child::Start(const std::vector<std::string>& args, ChildMain main) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return nullptr;
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return nullptr;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    int code = main(Flags(args));
    std::fflush(stdout);
    _exit(code);
  }
  close(in[0]);
  close(out[1]);
  return std::unique_ptr<Child>(new Child(pid, in[1], out[0]));
}

Child::~Child() {
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  close(in_fd_);
  close(out_fd_);
}

void Child::Go() {
  if (write(in_fd_, "go\n", 3) != 3) std::fprintf(stderr, "driver: child %d is gone\n", pid_);
}

void Child::Signal(int signal) { kill(pid_, signal); }

bool Child::PopLine(std::string* line) {
  size_t end = buffer_.find('\n');
  if (end == std::string::npos) return false;
  *line = buffer_.substr(0, end);
  buffer_.erase(0, end + 1);
  return true;
}

bool Child::Next(Record* record, int64_t deadline_ns) {
  std::string line;
  while (true) {
    while (PopLine(&line)) {
      if (line.rfind("R ", 0) != 0) {
        std::fprintf(stderr, "[child %d] %s\n", pid_, line.c_str());
        continue;
      }
      std::istringstream in(line.substr(2));
      *record = Record{};
      in >> record->kind;
      std::string field;
      while (in >> field) {
        size_t eq = field.find('=');
        if (eq != std::string::npos) record->fields[field.substr(0, eq)] = field.substr(eq + 1);
      }
      return true;
    }
    if (!open_) return false;
    int64_t left_ms = (deadline_ns - MonoNs()) / 1'000'000;
    if (left_ms <= 0) return false;
    pollfd pfd{out_fd_, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left_ms)) <= 0) continue;
    char chunk[65536];
    ssize_t n = read(out_fd_, chunk, sizeof chunk);
    if (n <= 0) {
      open_ = false;
    } else {
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
}

bool Child::NextOf(const std::string& kind, Record* record, int64_t deadline_ns) {
  while (Next(record, deadline_ns)) {
    if (record->kind == kind) return true;
  }
  return false;
}

}  // namespace muster::bench
