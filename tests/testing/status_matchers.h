// gmock matchers for absl::Status and absl::StatusOr, named like abseil's own so that a later
// abseil upgrade is a find-and-replace.
#pragma once

#include <ostream>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <gmock/gmock.h>

namespace muster::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <class T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status;
  return status.ok();
}

MATCHER_P(StatusIs, code, "has status code " + absl::StatusCodeToString(code)) {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status;
  return status.code() == code;
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has status code " + absl::StatusCodeToString(code) + " and a matching message") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status;
  return status.code() == code &&
         ::testing::Matches(message_matcher)(std::string(status.message()));
}

// A StatusOr that is OK and whose value matches `value_matcher`.
MATCHER_P(IsOkAndHolds, value_matcher, "is OK and holds a matching value") {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status();
    return false;
  }
  return ::testing::ExplainMatchResult(value_matcher, *arg, result_listener);
}

}  // namespace muster::testing
