// A standby leader's answer (net/ha/ha_leader.h): every call that reaches a leader standing by
// for an HA job fails with Unavailable, and the status carries the active leader's address as a
// payload, so that an agent given several leader addresses goes on to the active one.
#pragma once

#include <optional>
#include <string>

#include <absl/status/status.h>
#include <absl/strings/cord.h>
#include <absl/strings/str_cat.h>

namespace muster {

inline constexpr char kStandbyLeaderUrl[] = "type.muster.dev/muster.StandbyLeader";

// Unavailable, naming the HA job and the active leader ("" when none is known: an election is
// under way).
inline absl::Status StandbyLeaderError(const std::string& name, const std::string& active) {
  absl::Status status = absl::UnavailableError(absl::StrCat(
      "this Muster leader is a standby of HA job ", name, "; ",
      active.empty() ? std::string("no leader is active yet (an election is under way)")
                     : absl::StrCat("the active leader is at ", active),
      ": connect there, or give the agent every leader's address (HOST:PORT,HOST:PORT)"));
  status.SetPayload(kStandbyLeaderUrl, absl::Cord(active));
  return status;
}

// The active leader a standby's answer names ("" when it knows none); nullopt for any other
// status.
inline std::optional<std::string> StandbyActiveLeader(const absl::Status& status) {
  auto payload = status.GetPayload(kStandbyLeaderUrl);
  if (!payload) return std::nullopt;
  return std::string(*payload);
}

}  // namespace muster
