// Protobuf's log lines under RateLimitProtobufLogs: a thousand strings that are not UTF-8, as a
// peer could send them, make one line, not a thousand. (It installs the limit for the rest of
// this test binary, which changes nothing else.)
#include "muster/net/process/protobuf_log.h"

#include <algorithm>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/proto/coordination_service.pb.h"

namespace muster {
namespace {

using ::testing::HasSubstr;

TEST(ProtobufLogTest, ThousandInvalidUtf8Strings_OneLine) {
  proto::KeyValueEntry entry;
  entry.set_key("k");
  std::string bytes = entry.SerializeAsString();
  bytes.back() = '\xff';  // the key's one byte: not UTF-8
  RateLimitProtobufLogs();
  RateLimitProtobufLogs();  // once per process
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(entry.ParseFromString(bytes));
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  EXPECT_THAT(log, HasSubstr("String field 'muster.proto.KeyValueEntry.key' contains invalid "
                             "UTF-8 data when parsing"));
}

}  // namespace
}  // namespace muster
