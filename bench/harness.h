// Process plumbing shared by the benchmark programs: flags, a monotonic clock common to all
// processes of the machine, child processes that report "R <kind> key=value ..." records on
// stdout and start on a "go" line on stdin, and CPU / RSS samples of the calling process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace muster::bench {

// CLOCK_MONOTONIC in nanoseconds: the same clock in every process (and std::chrono::steady_clock).
int64_t MonoNs();
void SleepUntilNs(int64_t when_ns);

// --key=value flags; a bare --key means "true".
class Flags {
 public:
  Flags(int argc, char** argv);
  explicit Flags(const std::vector<std::string>& args);  // args without the program name
  std::string Get(const std::string& key, const std::string& fallback = "") const;
  int64_t Int(const std::string& key, int64_t fallback) const;
  bool Has(const std::string& key) const { return values_.count(key) > 0; }
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// One line "R <kind> k1=v1 k2=v2 ..." written by a child process.
struct Record {
  std::string kind;
  std::map<std::string, std::string> fields;
  int64_t Int(const std::string& key, int64_t fallback = -1) const;
  double Double(const std::string& key, double fallback = -1) const;
};

// Child side: dies with its parent, and after `deadline_s` seconds (SIGALRM).
void BecomeChild(int64_t deadline_s);
// Child side: writes a record line and flushes it.
void Emit(const std::string& kind, const std::string& fields = "");
// Child side: blocks until the driver writes a line ("go") on stdin.
void WaitForGo();

// CPU time (user + system) and resident set size of the calling process.
struct Usage {
  int64_t cpu_ns = 0;
  int64_t rss_kib = 0;
  int64_t heap_kib = 0;  // allocated by malloc and still in use (RSS also counts freed memory)
};
Usage SampleUsage();

// The entry point of a child process, given its flags; returns its exit code.
using ChildMain = int (*)(const Flags& flags);

// Driver side: a child process, its stdout read as records.
class Child {
 public:
  // Forks and runs `main` with `args` in the child (no exec: large libraries stay loaded).
  // The caller must be single-threaded.
  static std::unique_ptr<Child> Start(const std::vector<std::string>& args, ChildMain main);
  ~Child();   // kills and reaps the child
  void Go();  // writes "go" on its stdin
  void Signal(int signal);
  pid_t pid() const { return pid_; }
  // Returns the next record, waiting until `deadline_ns`; false on timeout or end of output.
  bool Next(Record* record, int64_t deadline_ns);
  // Returns the next record of `kind`, skipping others; false on timeout or end of output.
  bool NextOf(const std::string& kind, Record* record, int64_t deadline_ns);

 private:
  Child(pid_t pid, int in_fd, int out_fd) : pid_(pid), in_fd_(in_fd), out_fd_(out_fd) {}
  bool PopLine(std::string* line);

  pid_t pid_;
  int in_fd_;
  int out_fd_;
  bool open_ = true;
  std::string buffer_;
};

}  // namespace muster::bench
