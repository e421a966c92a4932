// Key normalisation, sharding and limits of the key-value store (no actors).
#include "muster/actors/kv/store/kv_key.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(NormalizeKeyTest, SlashRuns_CollapsedAndTrimmed) {
  EXPECT_EQ(NormalizeKey("///a//b/c//"), "a/b/c");
}

TEST(NormalizeKeyTest, NormalKey_Unchanged) { EXPECT_EQ(NormalizeKey("nccl/id/3"), "nccl/id/3"); }

TEST(NormalizeKeyTest, SingleSegmentWithSlashes_BecomesSegment) {
  EXPECT_EQ(NormalizeKey("/a/"), "a");
  EXPECT_EQ(NormalizeKey("a"), "a");
}

TEST(NormalizeKeyTest, Root_BecomesEmpty) {
  EXPECT_EQ(NormalizeKey(""), "");
  EXPECT_EQ(NormalizeKey("/"), "");
  EXPECT_EQ(NormalizeKey("////"), "");
}

TEST(NormalizeKeyTest, OtherBytes_KeptAsIs) {
  EXPECT_EQ(NormalizeKey("a b/\xff\x01/c.d"), "a b/\xff\x01/c.d");
}

TEST(IsNormalizedKeyTest, MatchesNormalizeKey) {
  for (const char* key : {"", "a", "a/b", "/a", "a/", "a//b", "///a//b/c//"}) {
    EXPECT_EQ(IsNormalizedKey(key), NormalizeKey(key) == key) << key;
  }
}

TEST(DirectoryOfTest, NestedKey_FirstSegment) { EXPECT_EQ(DirectoryOf("nccl/id/3"), "nccl"); }

TEST(DirectoryOfTest, KeyEqualToDirectory_ItsOwnDirectory) {
  EXPECT_EQ(DirectoryOf("nccl"), "nccl");
}

TEST(DirectoryOfTest, Root_Empty) { EXPECT_EQ(DirectoryOf(""), ""); }

TEST(KvLimitsTest, Defaults_MatchTheDocumentedValues) {
  KvLimits limits;
  EXPECT_EQ(limits.max_key_bytes, 4096);
  EXPECT_EQ(limits.max_value_bytes, 4 * 1024 * 1024);
  EXPECT_EQ(limits.max_keys_per_directory, 1000000);
}

TEST(KvLimitsTest, FromConfig_ZeroFields_KeepDefaults) {
  proto::CoordinationServiceConfig config;
  config.set_max_value_bytes(10);
  KvLimits limits = KvLimits::FromConfig(config);
  EXPECT_EQ(limits.max_key_bytes, 4096);
  EXPECT_EQ(limits.max_value_bytes, 10);
  EXPECT_EQ(limits.max_keys_per_directory, 1000000);
}

TEST(KvLimitsTest, FromConfig_AllFields_Used) {
  proto::CoordinationServiceConfig config;
  config.set_max_key_bytes(7);
  config.set_max_value_bytes(8);
  config.set_max_keys_per_directory(9);
  KvLimits limits = KvLimits::FromConfig(config);
  EXPECT_EQ(limits.max_key_bytes, 7);
  EXPECT_EQ(limits.max_value_bytes, 8);
  EXPECT_EQ(limits.max_keys_per_directory, 9);
}

TEST(KvLimitsTest, FromConfig_NegativeField_KeepsDefault) {
  proto::CoordinationServiceConfig config;
  config.set_max_key_bytes(-1);
  EXPECT_EQ(KvLimits::FromConfig(config).max_key_bytes, 4096);
}

TEST(ValidateKeyTest, EmptyAfterNormalisation_InvalidArgumentNamingTheGivenKey) {
  EXPECT_THAT(ValidateKey("///", "", KvLimits()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"///\""), HasSubstr("empty"))));
}

TEST(ValidateKeyTest, AtTheLimit_Ok) {
  KvLimits limits;
  limits.max_key_bytes = 5;
  EXPECT_THAT(ValidateKey("a/bcd", "a/bcd", limits), IsOk());
}

TEST(ValidateKeyTest, OverTheLimit_InvalidArgumentNamingKeyLimitAndSize) {
  KvLimits limits;
  limits.max_key_bytes = 5;
  EXPECT_THAT(ValidateKey("a/bcde", "a/bcde", limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("a/bcde"), HasSubstr("6 bytes"), HasSubstr("limit of 5"),
                             HasSubstr("--max-key-size"))));
}

TEST(ValidateKeyTest, DefaultLimit_4097Bytes_InvalidArgument) {
  std::string key(4097, 'k');
  EXPECT_THAT(ValidateKey(key, key, KvLimits()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("4097 bytes"), HasSubstr("limit of 4096"))));
}

TEST(ValidateValueTest, AtTheLimit_Ok) {
  KvLimits limits;
  limits.max_value_bytes = 3;
  EXPECT_THAT(ValidateValue("a/b", "xyz", limits), IsOk());
}

TEST(ValidateValueTest, OverTheLimit_ResourceExhaustedNamingKeyLimitAndSize) {
  KvLimits limits;
  limits.max_value_bytes = 3;
  EXPECT_THAT(ValidateValue("a/b", "wxyz", limits),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("a/b"), HasSubstr("4 bytes"), HasSubstr("limit of 3"),
                             HasSubstr("--max-value-size"))));
}

TEST(ValidateDirectoryCapacityTest, BelowTheLimit_Ok) {
  KvLimits limits;
  limits.max_keys_per_directory = 2;
  EXPECT_THAT(ValidateDirectoryCapacity("a", "a/x", 1, limits), IsOk());
}

TEST(ValidateDirectoryCapacityTest, Full_ResourceExhaustedNamingDirectoryKeyAndLimit) {
  KvLimits limits;
  limits.max_keys_per_directory = 2;
  EXPECT_THAT(ValidateDirectoryCapacity("a", "a/x", 2, limits),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("directory a"), HasSubstr("a/x"), HasSubstr("2 keys"),
                             HasSubstr("--max-keys-per-directory"))));
}

TEST(KeyForMessageTest, LongKey_ShortenedWithItsSize) {
  std::string shown = KeyForMessage(std::string(1000, 'k'));
  EXPECT_LT(shown.size(), 200u);
  EXPECT_THAT(shown, HasSubstr("(1000 bytes)"));
}

TEST(KeyForMessageTest, ShortKey_Whole) { EXPECT_EQ(KeyForMessage("a/b"), "a/b"); }

}  // namespace
}  // namespace muster
