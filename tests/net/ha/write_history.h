// The history of acknowledged writes of restart_worker's loss writers run with --history (each
// prints "EVENT ack insert n=N at_us=T" and "EVENT ack increment sum=S at_us=T" as it is
// acknowledged), read back from their outputs so that a test can check it: in order, and when.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <gtest/gtest.h>

namespace muster::testing {

class WriteHistory {
 public:
  struct Ack {
    int writer;
    bool insert;     // else an increment
    int64_t number;  // the insert's n, or the increment's sum
    int64_t at_us;   // when the writer had the acknowledgement (wall clock)
  };

  // Reads writer `writer`'s acknowledgements from its output, and checks that they are what a
  // writer that stops at its first failure acknowledges: inserts n = 0, 1, 2, ... and sums
  // 1, 2, 3, ..., alternating, at times that never go back.
  void Add(int writer, const std::string& output) {
    int64_t inserts = 0, increments = 0, last_us = 0;
    for (absl::string_view line : absl::StrSplit(output, '\n')) {
      if (!absl::StartsWith(line, "EVENT ack ")) continue;
      Ack ack{.writer = writer, .insert = absl::StartsWith(line, "EVENT ack insert ")};
      ASSERT_TRUE(Number(line, ack.insert ? "n=" : "sum=", &ack.number) &&
                  Number(line, "at_us=", &ack.at_us))
          << line;
      EXPECT_EQ(ack.number, ack.insert ? inserts : increments + 1)
          << "writer " << writer << ": " << line;
      EXPECT_EQ(ack.insert, inserts == increments) << "writer " << writer << ": " << line;
      EXPECT_GE(ack.at_us, last_us) << line;
      (ack.insert ? inserts : increments) += 1;
      last_us = ack.at_us;
      acks_.push_back(ack);
    }
  }

  // The acknowledgements had in [from_us, to_us).
  std::vector<Ack> Between(int64_t from_us, int64_t to_us) const {
    std::vector<Ack> found;
    for (const Ack& ack : acks_) {
      if (ack.at_us >= from_us && ack.at_us < to_us) found.push_back(ack);
    }
    return found;
  }

  // How many inserts (or increments) writer `writer` had acknowledged.
  int64_t Count(int writer, bool insert) const {
    int64_t count = 0;
    for (const Ack& ack : acks_) count += ack.writer == writer && ack.insert == insert;
    return count;
  }

  static std::string Describe(const std::vector<Ack>& acks) {
    std::string text;
    for (const Ack& ack : acks) {
      absl::StrAppend(&text, "writer ", ack.writer, ack.insert ? " insert " : " increment ",
                      ack.number, " at_us=", ack.at_us, "\n");
    }
    return text;
  }

 private:
  static bool Number(absl::string_view line, absl::string_view name, int64_t* value) {
    size_t at = line.find(name);
    if (at == absl::string_view::npos) return false;
    absl::string_view rest = line.substr(at + name.size());
    return absl::SimpleAtoi(rest.substr(0, rest.find(' ')), value);
  }

  std::vector<Ack> acks_;
};

}  // namespace muster::testing
