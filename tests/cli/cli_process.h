// Helpers of the muster command's multi-process tests: a `muster serve` process on a free port
// (its address parsed from the ready line) and `muster` client processes, each bounded in time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <absl/strings/str_split.h>
#include <absl/time/time.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/subprocess.h"

namespace muster::cli {

using ::muster::testing::Subprocess;

// Every process of these tests finishes, or is killed, within this bound.
inline constexpr absl::Duration kBound = absl::Seconds(20);

struct Result {
  int code = -1;
  std::string output;  // stdout and stderr
};

inline std::unique_ptr<Subprocess> StartMuster(std::vector<std::string> args) {
  args.insert(args.begin(), MUSTER_CLI_BIN);
  auto process = Subprocess::Start(std::move(args));
  EXPECT_TRUE(process.ok()) << process.status();
  return process.ok() ? *std::move(process) : nullptr;
}

// Waits for `process` to exit; code -1 when it did not exit in time (it is killed then).
inline Result Finish(Subprocess& process, absl::Duration bound = kBound) {
  auto code = process.Wait(bound);
  EXPECT_TRUE(code.ok()) << code.status();
  return {code.ok() ? *code : -1, process.output()};
}

// Runs `muster args...` to completion.
inline Result RunMuster(std::vector<std::string> args, absl::Duration bound = kBound) {
  auto process = StartMuster(std::move(args));
  if (process == nullptr) return {};
  return Finish(*process, bound);
}

// A `muster serve` process on a free port of 127.0.0.1.
class Leader {
 public:
  // Starts `muster serve --port=0 <args>` and waits for its ready line.
  explicit Leader(std::vector<std::string> args) {
    args.insert(args.begin(), {"serve", "--port=0"});
    process_ = StartMuster(std::move(args));
    if (process_ == nullptr) return;
    auto ready = process_->WaitForLine("muster leader ready at ", kBound);
    EXPECT_TRUE(ready.ok()) << ready.status();
    if (!ready.ok()) return;
    std::vector<std::string> words = absl::StrSplit(*ready, ' ');
    address_ = words.size() > 4 ? words[4] : "";
  }

  bool ok() const { return !address_.empty(); }
  // HOST:PORT as the ready line printed it.
  const std::string& address() const { return address_; }
  std::string leader_flag() const { return "--leader=" + address_; }
  Subprocess& process() { return *process_; }

 private:
  std::unique_ptr<Subprocess> process_;
  std::string address_;
};

// `muster kv <verb> --leader=<leader> args...` to completion.
inline Result Kv(const Leader& leader, const std::string& verb, std::vector<std::string> args) {
  args.insert(args.begin(), {"kv", verb, leader.leader_flag()});
  return RunMuster(std::move(args));
}

}  // namespace muster::cli
