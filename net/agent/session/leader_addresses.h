// The leaders a session may reach: one address, or an HA job's leaders (net/ha/ha_leader.h),
// tried in turn. A standby names the active leader; the session follows it (Follow), adding it
// when it was not given (a leader that advertises another name than the one the agent knows).
// Plain class: the leader session actor keeps one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <absl/status/statusor.h>
#include <absl/strings/string_view.h>

namespace muster {

// "HOST:PORT" or "[IPv6]:PORT" -> host (without brackets) and port. Possible errors:
// InvalidArgument, naming the text and the expected form.
absl::StatusOr<std::pair<std::string, uint16_t>> ParseLeaderAddress(absl::string_view text);

// An HA job's leaders read from etcd: "etcd://ENDPOINTS/NAME" (ha_leader_registry.h).
inline constexpr absl::string_view kEtcdLeaderScheme = "etcd://";

// The addresses of a leader list, "HOST:PORT,HOST:PORT" (an HA job's leaders; one address is a
// list of one), each without the whitespace around it; none for a text of only commas and
// spaces. Each is then parsed by whoever asked.
std::vector<std::string> SplitLeaderList(absl::string_view text);

class LeaderAddresses {
 public:
  // At most this many addresses (those a standby names beyond it are not added).
  static constexpr size_t kMax = 16;

  LeaderAddresses() = default;
  // `host:port` first, then `others` ("HOST:PORT" each, checked with ParseLeaderAddress by
  // whoever took them from the user; malformed ones are skipped).
  LeaderAddresses(const std::string& host, uint16_t port, const std::vector<std::string>& others);

  // More than one leader to try.
  bool several() const { return addresses_.size() > 1; }
  const std::string& host() const { return addresses_[index_].first; }
  uint16_t port() const { return addresses_[index_].second; }
  std::string current() const;
  // "HOST:PORT, HOST:PORT", for messages.
  std::string all() const;

  // The next address. True when every address failed since the last success or Follow (time to
  // wait a little before the next round).
  bool Next();
  // The address a standby named as the active leader; added when unknown. Counts toward the
  // round as Next() does (returns true when it completes one), so that leaders that name each
  // other are not asked in a tight loop; naming the current address is a Next().
  bool Follow(absl::string_view address);
  // Adds `address` ("HOST:PORT") when it is well-formed, unknown, and there is room (kMax);
  // whether it was added. The current address stays.
  bool Add(absl::string_view address);
  // The current address worked: a new round starts from it.
  void Reached() { failed_in_round_ = 0; }

 private:
  // Where `address` is among the addresses; their number when it is not.
  size_t IndexOf(const std::pair<std::string, uint16_t>& address) const;

  std::vector<std::pair<std::string, uint16_t>> addresses_{{"127.0.0.1", 7400}};
  size_t index_ = 0;
  size_t failed_in_round_ = 0;
};

}  // namespace muster
