// CutText: text within the bound is kept whole; longer text is cut between UTF-8 characters and
// says how much was cut.
#include "muster/messages/status/cut_text.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace muster {
namespace {

using ::testing::EndsWith;
using ::testing::StartsWith;

TEST(CutTextTest, WithinTheBound_KeptWhole) {
  EXPECT_EQ(CutText("", 4), "");
  EXPECT_EQ(CutText("abcd", 4), "abcd");
}

TEST(CutTextTest, OverTheBound_CutSayingHowMuch) {
  EXPECT_EQ(CutText("abcdef", 4), "abcd [cut: 2 more bytes]");
  EXPECT_EQ(CutText(std::string(10000, 'x'), 100),
            std::string(100, 'x') + " [cut: 9900 more bytes]");
}

TEST(CutTextTest, ACharacterAcrossTheBound_IsCutWhole) {
  // "é" is two bytes (C3 A9): a bound between them keeps neither.
  const std::string text =
      "ab\xC3\xA9"
      "cd";
  EXPECT_EQ(CutText(text, 3), "ab [cut: 4 more bytes]");
  EXPECT_EQ(CutText(text, 4), "ab\xC3\xA9 [cut: 2 more bytes]");
  // A four-byte character (U+1F600) across the bound.
  const std::string emoji = "a\xF0\x9F\x98\x80";
  EXPECT_THAT(CutText(emoji, 3), StartsWith("a ["));
  EXPECT_THAT(CutText(emoji, 3), EndsWith("4 more bytes]"));
}

TEST(CutTextTest, TextThatIsNotUtf8_IsCutAtTheBound) {
  // A run of continuation bytes has no character start to go back to: cut where the bound says
  // rather than keep nothing.
  const std::string bytes(100, '\x80');
  EXPECT_EQ(CutText(bytes, 10), std::string(10, '\x80') + " [cut: 90 more bytes]");
}

}  // namespace
}  // namespace muster
