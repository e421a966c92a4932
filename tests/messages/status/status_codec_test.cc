// The status codec: every code, message and payload survives ToError/ToStatus, also across
// CAF's serializer; CAF's own errors become transport statuses without a coordination payload.
#include <optional>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/exit_reason.hpp>
#include <caf/sec.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/messages/task_name.h"
#include "muster/messages/vocabulary/message_types.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::HasSubstr;

TEST(StatusCodecTest, Ok_IsTheEmptyError) {
  EXPECT_FALSE(ToError(absl::OkStatus()));
  EXPECT_THAT(ToStatus(caf::error{}), IsOk());
}

TEST(StatusCodecTest, EveryCode_RoundTripsWithMessage) {
  for (int code = 1; code <= 16; ++code) {
    absl::Status in(static_cast<absl::StatusCode>(code), "task /job:w/task:1 did a thing");
    caf::error error = ToError(in);
    EXPECT_EQ(error.category(), kStatusCategory);
    EXPECT_EQ(error.code(), code);
    EXPECT_EQ(ToStatus(error), in) << code;
  }
}

TEST(StatusCodecTest, CoordinationPayload_SurvivesWithSourceTask) {
  absl::Status in = MakeCoordinationError(absl::UnavailableError("gone"), MakeTask("worker", 7),
                                          /*is_reported_error=*/true);
  absl::Status out = ToStatus(ToError(in));
  EXPECT_EQ(out, in);
  auto payload = GetCoordinationError(out);
  ASSERT_TRUE(payload.has_value());
  EXPECT_EQ(TaskName(payload->source_task()), "/job:worker/task:7");
  EXPECT_TRUE(payload->is_reported_error());
}

TEST(StatusCodecTest, BarrierPayload_CarriesCounterAndCoordinationPayload) {
  absl::Status in = MakeBarrierError(absl::DeadlineExceededError("late"), "step", 4);
  absl::Status out = ToStatus(ToError(in));
  EXPECT_EQ(GetBarrierCounter(out), 4);
  EXPECT_TRUE(GetCoordinationError(out).has_value());
  EXPECT_EQ(GetBarrierCounter(absl::InternalError("no payload")), -1);
}

TEST(StatusCodecTest, FailedTask_RoundTripsWithTheOtherPayloads) {
  absl::Status in = MakeBarrierError(
      WithFailedTask(absl::InternalError("Barrier failed because: task disconnected"),
                     MakeTask("worker", 2)),
      "done", 0);
  absl::Status out = ToStatus(ToError(in));
  EXPECT_EQ(out, in);
  std::optional<proto::CoordinatedTask> failed = FailedTaskOf(out);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(TaskName(*failed), "/job:worker/task:2");
  EXPECT_EQ(GetBarrierCounter(out), 0);
  EXPECT_TRUE(out.GetPayload(kFailedTaskUrl).has_value());
}

TEST(StatusCodecTest, FailedTask_AbsentOrMalformedIsNullopt) {
  EXPECT_FALSE(FailedTaskOf(absl::InternalError("no payload")).has_value());
  EXPECT_FALSE(
      FailedTaskOf(MakeCoordinationError(absl::InternalError("x"), MakeTask("w", 1))).has_value());
  absl::Status garbage = absl::InternalError("x");
  garbage.SetPayload(kFailedTaskUrl, absl::Cord("\xff\xff"));
  EXPECT_FALSE(FailedTaskOf(garbage).has_value());
  EXPECT_THAT(WithFailedTask(absl::OkStatus(), MakeTask("w", 1)), IsOk());
}

TEST(StatusCodecTest, FailedTask_SurvivesSerialization) {
  caf::actor_system_config cfg;
  AddMessageTypes(cfg);
  caf::actor_system system{cfg};
  absl::Status in = WithFailedTask(absl::InternalError("peer died"), MakeTask("ps", 3));
  std::vector<char> buffer;
  caf::binary_serializer sink{system, buffer};
  caf::error error = ToError(in);
  ASSERT_FALSE(sink(error));
  caf::error out;
  caf::binary_deserializer source{system, buffer};
  ASSERT_FALSE(source(out));
  absl::Status back = ToStatus(out);
  EXPECT_EQ(back, in);
  ASSERT_TRUE(FailedTaskOf(back).has_value());
  EXPECT_EQ(TaskName(*FailedTaskOf(back)), "/job:ps/task:3");
}

TEST(StatusCodecTest, ErrorWithPayload_SurvivesSerialization) {
  caf::actor_system_config cfg;
  AddMessageTypes(cfg);
  caf::actor_system system{cfg};
  absl::Status in = MakeCoordinationError(absl::AbortedError("restarted"), MakeTask("ps", 0));
  std::vector<char> buffer;
  caf::binary_serializer sink{system, buffer};
  caf::error error = ToError(in);
  ASSERT_FALSE(sink(error));
  caf::error out;
  caf::binary_deserializer source{system, buffer};
  ASSERT_FALSE(source(out));
  EXPECT_EQ(ToStatus(out), in);
  EXPECT_THAT(system.render(out), HasSubstr("ABORTED"));
}

TEST(StatusCodecTest, TransportErrors_MapWithoutCoordinationPayload) {
  absl::Status timeout = ToStatus(caf::make_error(caf::sec::request_timeout));
  EXPECT_THAT(timeout, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_FALSE(GetCoordinationError(timeout).has_value());
  EXPECT_THAT(ToStatus(caf::make_error(caf::exit_reason::remote_link_unreachable)),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(ToStatus(caf::make_error(caf::sec::request_receiver_down)),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(ToStatus(caf::make_error(caf::sec::unexpected_message)),
              StatusIs(absl::StatusCode::kInternal));
}

TEST(StatusCodecTest, OutOfRangeCode_BecomesUnknown) {
  caf::error error(static_cast<uint8_t>(99), kStatusCategory);
  EXPECT_THAT(ToStatus(error), StatusIs(absl::StatusCode::kUnknown));
}

TEST(StatusCodecTest, StatusText_NamesTheSourceTaskInsteadOfPayloadBytes) {
  absl::Status status = MakeCoordinationError(absl::UnavailableError("heartbeat timeout"),
                                              MakeTask("worker", 1), /*is_reported_error=*/true);
  EXPECT_EQ(StatusText(status),
            "UNAVAILABLE: heartbeat timeout [source task /job:worker/task:1, reported by it]");
  EXPECT_THAT(status.ToString(), ::testing::HasSubstr("type.googleapis.com"));
  EXPECT_EQ(StatusText(absl::NotFoundError("no key")), "NOT_FOUND: no key");
  EXPECT_EQ(StatusText(absl::OkStatus()), "OK");
}

}  // namespace
}  // namespace muster
