#include "muster/messages/direct/direct_frames.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/messages/requests/kv_requests.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

TEST(DirectFramesTest, AFrameIsItsBigEndianLengthThenTheMessage) {
  proto::DirectRequest request;
  SetDirectCall(request, requests::TryGetKeyValue(std::string(300, 'k')));
  std::string frame = EncodeDirectFrame(request);
  ASSERT_EQ(frame.size(), kDirectHeaderBytes + request.ByteSizeLong());
  EXPECT_EQ(DirectFrameLength(frame.substr(0, kDirectHeaderBytes)), request.ByteSizeLong());
  EXPECT_EQ(static_cast<uint8_t>(frame[2]), (request.ByteSizeLong() >> 8) & 0xff);
  proto::DirectRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(frame.substr(kDirectHeaderBytes)));
  EXPECT_EQ(parsed.try_get_key_value().key(), std::string(300, 'k'));
  EXPECT_EQ(DirectFrameLength(std::string("\xff\xff\xff\xff", 4)), 0xffffffffu);
}

TEST(DirectFramesTest, AReplyIsTakenFromItsOwnCaseOnly) {
  proto::IncrementKeyValueResponse increment;
  increment.mutable_kv()->set_value("7");
  proto::DirectResponse response = DirectReply(increment);
  auto taken = TakeDirectReply<proto::IncrementKeyValueResponse>(response);
  ASSERT_THAT(taken.status(), IsOk());
  EXPECT_EQ(taken->kv().value(), "7");
  proto::DirectResponse other = DirectReply(proto::InsertKeyValueResponse());
  EXPECT_THAT(TakeDirectReply<proto::IncrementKeyValueResponse>(other).status(),
              StatusIs(Code::kInternal, HasSubstr("answered case")));
}

TEST(DirectFramesTest, AnErrorKeepsItsCodeAndACutMessage_AnUnknownCodeIsUnknown) {
  proto::DirectResponse error = DirectError(absl::NotFoundError(std::string(40'000, 'x')));
  EXPECT_EQ(DirectStatus(error).code(), Code::kNotFound);
  EXPECT_LT(error.message().size(), 17'000u);
  EXPECT_THAT(error.message(), HasSubstr("[cut:"));
  EXPECT_THAT(TakeDirectReply<proto::TryGetKeyValueResponse>(error).status(),
              StatusIs(Code::kNotFound));
  proto::DirectResponse odd;
  odd.set_code(99);
  odd.set_message("from elsewhere");
  EXPECT_THAT(DirectStatus(odd), StatusIs(Code::kUnknown, HasSubstr("from elsewhere")));
  odd.set_code(-3);
  EXPECT_EQ(DirectStatus(odd).code(), Code::kUnknown);
}

TEST(DirectFramesTest, EphemeralWritesAndAuthenticationAreNotDirectCalls) {
  proto::DirectRequest request;
  SetDirectCall(request, requests::InsertKeyValue("k", "v", false, /*ephemeral=*/false));
  EXPECT_TRUE(IsDirectCall(request));
  SetDirectCall(request, requests::InsertKeyValue("k", "v", false, /*ephemeral=*/true));
  EXPECT_FALSE(IsDirectCall(request));
  SetDirectCall(request, requests::CompareAndSwap("k", std::nullopt, "v", /*ephemeral=*/true));
  EXPECT_FALSE(IsDirectCall(request));
  SetDirectCall(request, requests::CompareAndSwap("k", std::nullopt, "v", /*ephemeral=*/false));
  EXPECT_TRUE(IsDirectCall(request));
  request.mutable_authenticate()->set_token("t");
  EXPECT_FALSE(IsDirectCall(request));
  EXPECT_FALSE(IsDirectCall(proto::DirectRequest()));
}

}  // namespace
}  // namespace muster
