#include "muster/net/agent/session/leader_addresses.h"

#include <algorithm>

#include <absl/strings/ascii.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>

namespace muster {

absl::StatusOr<std::pair<std::string, uint16_t>> ParseLeaderAddress(absl::string_view text) {
  size_t colon = text.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(text.substr(colon + 1), &port) || port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("invalid leader address \"", text,
                                                   "\"; expected HOST:PORT, e.g. 127.0.0.1:7400"));
  }
  std::string host(text.substr(0, colon));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // [IPv6]:PORT
  }
  return std::make_pair(std::move(host), static_cast<uint16_t>(port));
}

std::vector<std::string> SplitLeaderList(absl::string_view text) {
  std::vector<std::string> addresses;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    addresses.emplace_back(absl::StripAsciiWhitespace(part));
  }
  return addresses;
}

LeaderAddresses::LeaderAddresses(const std::string& host, uint16_t port,
                                 const std::vector<std::string>& others) {
  addresses_ = {{host, port}};
  for (const std::string& other : others) {
    absl::StatusOr<std::pair<std::string, uint16_t>> parsed = ParseLeaderAddress(other);
    if (!parsed.ok() || addresses_.size() >= kMax) continue;
    if (std::find(addresses_.begin(), addresses_.end(), *parsed) == addresses_.end()) {
      addresses_.push_back(*std::move(parsed));
    }
  }
}

std::string LeaderAddresses::current() const {
  const std::string& h = host();
  return h.find(':') != std::string::npos ? absl::StrCat("[", h, "]:", port())
                                          : absl::StrCat(h, ":", port());
}

std::string LeaderAddresses::all() const {
  std::string text;
  for (const auto& [host, port] : addresses_) {
    absl::StrAppend(&text, text.empty() ? "" : ", ", host, ":", port);
  }
  return text;
}

bool LeaderAddresses::Next() {
  index_ = (index_ + 1) % addresses_.size();
  if (++failed_in_round_ >= addresses_.size()) {
    failed_in_round_ = 0;
    return true;
  }
  return false;
}

bool LeaderAddresses::Follow(absl::string_view address) {
  absl::StatusOr<std::pair<std::string, uint16_t>> parsed = ParseLeaderAddress(address);
  if (!parsed.ok() || *parsed == addresses_[index_]) return Next();
  const size_t target = IndexOf(*parsed);
  if (target == addresses_.size()) {
    if (addresses_.size() >= kMax) return Next();
    addresses_.push_back(*std::move(parsed));
  }
  index_ = target;
  if (++failed_in_round_ >= addresses_.size()) {
    failed_in_round_ = 0;
    return true;
  }
  return false;
}

bool LeaderAddresses::Add(absl::string_view address) {
  absl::StatusOr<std::pair<std::string, uint16_t>> parsed = ParseLeaderAddress(address);
  if (!parsed.ok() || addresses_.size() >= kMax || IndexOf(*parsed) < addresses_.size()) {
    return false;
  }
  addresses_.push_back(*std::move(parsed));
  return true;
}

size_t LeaderAddresses::IndexOf(const std::pair<std::string, uint16_t>& address) const {
  return std::find(addresses_.begin(), addresses_.end(), address) - addresses_.begin();
}

}  // namespace muster
