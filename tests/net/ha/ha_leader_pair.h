// Two `muster serve --ha-etcd` processes of one HA job, as the multi-process HA tests run them
// (on loopback or on hosts of a test bed): which one serves, what each printed, killing one.
// The leaders print stamped role lines ("active: serving ...", "standby: ..."); a takeover is
// one more "active: serving" line than the pair had counted for that leader.
#pragma once

#include <csignal>
#include <cstdint>
#include <memory>
#include <string>

#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>
#include <absl/time/time.h>
#include <gtest/gtest.h>

#include "muster/tools/run/subprocess.h"
#include "tests/testing/line_stamp.h"

namespace muster::testing {

struct HaLeaderPair {
  // How often `text` occurs in `out`.
  static int Count(const std::string& out, const std::string& text) {
    int count = 0;
    for (size_t at = out.find(text); at != std::string::npos; at = out.find(text, at + 1)) {
      ++count;
    }
    return count;
  }

  int Takeovers(int i) const { return Count(process[i]->output(), "active: serving"); }

  // Which leader serves: waits until one says it took over once more than counted before.
  int Active(absl::Duration bound) {
    const absl::Time end = absl::Now() + bound;
    while (absl::Now() < end) {
      for (int i = 0; i < 2; ++i) {
        if (process[i] && Takeovers(i) > takeovers[i]) {
          takeovers[i] = Takeovers(i);
          return i;
        }
      }
      for (int i = 0; i < 2; ++i) {
        if (process[i]) (void)process[i]->WaitForLine("\n", absl::Milliseconds(20));
      }
    }
    ADD_FAILURE() << "no leader took over; outputs:\n" << Outputs();
    return -1;
  }

  // The last line of leader `i` that holds `text`, stamped at or after `since_us` (read as its
  // output comes; WaitForLine may have moved past the lines Active() read); empty if none came
  // within `bound`.
  std::string Saw(int i, const std::string& text, absl::Duration bound, int64_t since_us = -1) {
    const absl::Time end = absl::Now() + bound;
    while (true) {
      const std::string& out = process[i]->output();
      size_t at = out.rfind(text);
      if (at != std::string::npos) {
        size_t begin = out.rfind('\n', at);
        begin = begin == std::string::npos ? 0 : begin + 1;
        std::string line = out.substr(begin, out.find('\n', at) - begin);
        if (since_us < 0 || LineStampMicros(line) >= since_us) return line;
      }
      if (absl::Now() >= end) return "";
      (void)process[i]->WaitForLine("\n", absl::Milliseconds(50));
    }
  }

  void Kill(int i, absl::Duration bound) {
    process[i]->Signal(SIGKILL);
    (void)process[i]->Wait(bound);
    process[i].reset();
    takeovers[i] = 0;
  }

  std::string Outputs() const {
    return absl::StrCat(process[0] ? process[0]->output() : "", "\n---\n",
                        process[1] ? process[1]->output() : "");
  }

  std::unique_ptr<Subprocess> process[2];
  int takeovers[2] = {0, 0};
};

}  // namespace muster::testing
