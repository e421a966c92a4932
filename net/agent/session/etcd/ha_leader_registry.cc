#include "muster/net/agent/session/etcd/ha_leader_registry.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

#include <absl/base/thread_annotations.h>
#include <absl/cleanup/cleanup.h>
#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/hash/hash.h>
#include <absl/strings/ascii.h>
#include <absl/strings/escaping.h>
#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>
#include <absl/strings/strip.h>
#include <absl/synchronization/mutex.h>
#include <absl/time/clock.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "muster/net/agent/session/etcd/etcd_gateway_post.h"

namespace muster {
namespace {

// The most leaders read (more would be a misconfiguration: LeaderAddresses keeps 16).
constexpr int kMaxRegistered = 64;
// A reply of etcd's gateway larger than this is not the two small ranges asked for.
constexpr size_t kMaxReplyBytes = 256 << 10;

using google::protobuf::Struct;
using google::protobuf::Value;

// The base64 values of the kvs of `response` (one of a txn's responses, {"response_range":
// {"kvs": [{"value": ...}]}}), decoded.
std::vector<std::string> RangeValues(const Value& response) {
  std::vector<std::string> values;
  const auto& fields = response.struct_value().fields();
  auto range = fields.find("response_range");
  if (range == fields.end()) return values;
  const auto& range_fields = range->second.struct_value().fields();
  auto kvs = range_fields.find("kvs");
  if (kvs == range_fields.end()) return values;
  for (const Value& kv : kvs->second.list_value().values()) {
    const auto& kv_fields = kv.struct_value().fields();
    auto value = kv_fields.find("value");
    std::string decoded;
    if (value != kv_fields.end() && absl::Base64Unescape(value->second.string_value(), &decoded)) {
      values.push_back(std::move(decoded));
    }
    if (static_cast<int>(values.size()) >= kMaxRegistered) break;
  }
  return values;
}

// The process's etcd tokens, by user and cluster: etcd keeps every token it hands out for
// minutes, so reads share one instead of authenticating each time.
class TokenCache {
 public:
  static TokenCache& Get() {
    static TokenCache* cache = new TokenCache();  // never destroyed: used until the process ends
    return *cache;
  }
  // The token of `key`, or (an empty one) the turn to ask etcd for it, which EndTurn ends: reads
  // that find no token ask once (each authentication is a raft write and a bcrypt check in
  // etcd), the others wait for that read, each until its own `deadline` (DeadlineExceeded).
  // Not an actor's: reads run on threads that may block (ReadHaLeadersThroughGateway).
  absl::StatusOr<std::string> FindOrTakeTurn(const std::string& key, absl::Time deadline) {
    absl::MutexLock lock(&mutex_);
    auto settled = [&] { return !asking_.contains(key); };
    if (!mutex_.AwaitWithDeadline(absl::Condition(&settled), deadline)) {
      return absl::DeadlineExceededError("no time left while another read authenticated");
    }
    if (auto it = tokens_.find(key); it != tokens_.end()) return it->second;
    asking_.insert(key);
    return std::string();
  }
  // Ends the turn FindOrTakeTurn gave, with the `token` etcd answered (none: it refused).
  void EndTurn(const std::string& key, const std::string& token) {
    absl::MutexLock lock(&mutex_);
    asking_.erase(key);
    if (!token.empty()) {
      tokens_[key] = token;
      authentications_.fetch_add(1);
    }
  }
  uint64_t authentications() const { return authentications_.load(); }
  // Forgets `token` (etcd no longer knows it), unless another read replaced it already.
  void Forget(const std::string& key, const std::string& token) {
    absl::MutexLock lock(&mutex_);
    auto it = tokens_.find(key);
    if (it != tokens_.end() && it->second == token) tokens_.erase(it);
  }

 private:
  absl::Mutex mutex_;
  absl::flat_hash_map<std::string, std::string> tokens_ ABSL_GUARDED_BY(mutex_);
  absl::flat_hash_set<std::string> asking_ ABSL_GUARDED_BY(mutex_);  // keys being authenticated
  std::atomic<uint64_t> authentications_{0};
};

// etcd's answer to a token it no longer knows (expired, a member restarted), or to one from
// before a change of its users.
bool TokenRefused(const GatewayReply& reply) {
  return reply.status == 401 || absl::StrContains(reply.body, "invalid auth token") ||
         absl::StrContains(reply.body, "revision of auth store is old");
}

// One member's answer to the txn `body`: the registered leaders and the active one.
// Possible errors: Unavailable or DeadlineExceeded (the member did not answer well: the next
// may), FailedPrecondition (it refused the request: its gateway is off, or it is not etcd),
// InvalidArgument (etcd refused the user), Unauthenticated (etcd wants a user, or refused the
// user's fresh token), PermissionDenied.
absl::StatusOr<std::pair<std::vector<std::string>, std::optional<std::string>>> AskMember(
    const std::string& endpoint, const EtcdSecurity& security, const std::string& tokens_key,
    const std::string& body, absl::Duration timeout) {
  std::unique_ptr<httplib::ClientImpl> client = NewGatewayClient(endpoint, security);
  const absl::Time deadline = absl::Now() + timeout;
  absl::StatusOr<GatewayReply> reply;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string token;
    if (security.auth()) {
      TokenCache& cache = TokenCache::Get();
      absl::StatusOr<std::string> found = cache.FindOrTakeTurn(tokens_key, deadline);
      if (!found.ok()) {
        return absl::Status(found.status().code(),
                            absl::StrCat("etcd at ", endpoint, ": ", found.status().message()));
      }
      token = *std::move(found);
      if (token.empty()) {  // this read's turn
        absl::StatusOr<std::string> authenticated = absl::UnknownError("not asked");
        {
          absl::Cleanup end_turn = [&] {
            cache.EndTurn(tokens_key, authenticated.ok() ? *authenticated : std::string());
          };
          authenticated = EtcdGatewayAuthenticate(*client, security, deadline);
        }
        if (!authenticated.ok()) {
          return absl::Status(
              authenticated.status().code(),
              absl::StrCat("etcd at ", endpoint, ": ", authenticated.status().message()));
        }
        token = *std::move(authenticated);
      }
    }
    reply = PostToGateway(*client, "/v3/kv/txn", body, deadline, kMaxReplyBytes, token);
    if (!reply.ok() || !security.auth() || !TokenRefused(*reply)) break;
    TokenCache::Get().Forget(tokens_key, token);
  }
  if (!reply.ok()) {
    return absl::Status(reply.status().code(),
                        absl::StrCat("etcd at ", endpoint, ": ", reply.status().message()));
  }
  const std::string& received = reply->body;
  if (absl::StrContains(received, "user name is empty")) {
    return EtcdUserRequiredError(endpoint);
  }
  if (security.auth() && TokenRefused(*reply)) {
    return absl::UnauthenticatedError(absl::StrCat(
        "etcd at ", endpoint, " refused a fresh token of user \"", absl::CHexEscape(security.user),
        "\" (", absl::CHexEscape(received.substr(0, 200)), ")"));
  }
  if (absl::StrContains(received, "permission denied")) {
    return absl::PermissionDeniedError(absl::StrCat(
        "etcd at ", endpoint, " denied user \"", absl::CHexEscape(security.user),
        "\" the job's keys: grant it read on the prefix muster/ (etcdctl role grant-permission)"));
  }
  if (reply->status == 429) {  // "too many requests": that member is behind; another may answer
    return absl::UnavailableError(absl::StrCat("etcd at ", endpoint, " answered HTTP 429 (",
                                               absl::CHexEscape(received.substr(0, 200)), ")"));
  }
  if (reply->status >= 400 && reply->status < 500) {
    return absl::FailedPreconditionError(absl::StrCat(
        "etcd at ", endpoint, " refused POST /v3/kv/txn with HTTP ", reply->status, " (",
        absl::CHexEscape(received.substr(0, 200)),
        "): is it etcd 3.4 or later, with its gRPC gateway on (--enable-grpc-gateway, the "
        "default)?"));
  }
  if (reply->status != 200) {
    return absl::UnavailableError(absl::StrCat("etcd at ", endpoint, " answered HTTP ",
                                               reply->status, ": ",
                                               absl::CHexEscape(received.substr(0, 200))));
  }
  Struct parsed;
  if (!google::protobuf::util::JsonStringToMessage(received, &parsed).ok()) {
    return absl::UnavailableError(absl::StrCat("etcd at ", endpoint, " answered what is not JSON: ",
                                               absl::CHexEscape(received.substr(0, 200))));
  }
  auto responses = parsed.fields().find("responses");
  if (responses == parsed.fields().end() || responses->second.list_value().values_size() != 2) {
    return absl::UnavailableError(absl::StrCat(
        "etcd at ", endpoint,
        " answered without the two ranges asked for: ", absl::CHexEscape(received.substr(0, 200))));
  }
  const auto& both = responses->second.list_value().values();
  std::optional<std::string> active;
  if (std::vector<std::string> holder = RangeValues(both[1]); holder.size() == 1) {
    active = std::move(holder[0]);
  }
  return std::make_pair(RangeValues(both[0]), std::move(active));
}

}  // namespace

absl::Status CheckHaName(const std::string& name) {
  bool valid = !name.empty() && name.size() <= 128;
  for (char c : name) {
    valid = valid && (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
                      c == '.');
  }
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "HA name \"", absl::CHexEscape(name.substr(0, 140)),
      "\" is not valid: give 1 to 128 letters, digits, '-', '_' or '.' (the job's name)"));
}

std::string HaPrefix(const std::string& name) { return absl::StrCat("muster/", name, "/"); }
std::string HaLeaderKey(const std::string& name) { return HaPrefix(name) + "leader"; }
std::string HaLeadersPrefix(const std::string& name) { return HaPrefix(name) + "leaders/"; }

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

absl::StatusOr<std::vector<std::string>> ParseEtcdEndpoints(absl::string_view text) {
  std::vector<std::string> endpoints;
  int https = 0, http = 0;  // a bare HOST:PORT counts as http://
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    part = absl::StripAsciiWhitespace(part);
    if (absl::ConsumePrefix(&part, "https://")) {
      ++https;
    } else {
      absl::ConsumePrefix(&part, "http://");
      ++http;
    }
    if (https > 0 && http > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "etcd endpoints \"", text,
          "\" mix https:// with http:// or bare HOST:PORT: a cluster's members are all reached "
          "over TLS (each https://) or none"));
    }
    size_t colon = part.rfind(':');
    uint32_t port = 0;
    if (colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(part.substr(colon + 1), &port) || port == 0 || port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("etcd endpoint \"", part, "\" is not HOST:PORT (e.g. 127.0.0.1:2379)"));
    }
    endpoints.emplace_back(part);
  }
  if (endpoints.empty()) {
    return absl::InvalidArgumentError(
        "no etcd endpoints given: name the members as HOST:PORT,HOST:PORT");
  }
  return endpoints;
}

bool EtcdEndpointsUseTls(absl::string_view text) {
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(part), "https://")) return true;
  }
  return false;
}

absl::StatusOr<EtcdLeaderUrl> ParseEtcdLeaderUrl(absl::string_view text) {
  auto form = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not etcd://HOST:PORT[,HOST:PORT...]/NAME (etcd's members, ",
                     "then the HA name the leaders were started with: --ha-name)"));
  };
  if (!absl::StartsWith(text, kEtcdLeaderScheme)) return form();
  absl::string_view rest = text.substr(kEtcdLeaderScheme.size());
  const size_t slash = rest.rfind('/');
  if (slash == absl::string_view::npos || slash == 0 || slash + 1 == rest.size()) return form();
  // "etcd://https://h:2379" without a name: the slash found is the scheme's.
  if (rest[slash - 1] == '/' || rest[slash - 1] == ':') return form();
  EtcdLeaderUrl url;
  absl::StatusOr<std::vector<std::string>> endpoints = ParseEtcdEndpoints(rest.substr(0, slash));
  if (!endpoints.ok()) return endpoints.status();
  url.endpoints = *std::move(endpoints);
  url.name = std::string(rest.substr(slash + 1));
  url.tls = EtcdEndpointsUseTls(rest.substr(0, slash));
  if (absl::Status name = CheckHaName(url.name); !name.ok()) return name;
  return url;
}

absl::StatusOr<std::vector<std::string>> OrderHaLeaders(std::vector<std::string> registered,
                                                        const std::optional<std::string>& active,
                                                        const std::string& name,
                                                        const std::string& endpoints) {
  // What is not one address (a value etcd holds that no leader of Muster wrote) is skipped.
  auto malformed = [](const std::string& value) {
    return value.find_first_of(", \t\n") != std::string::npos || !ParseLeaderAddress(value).ok();
  };
  std::vector<std::string> leaders = std::move(registered);
  leaders.erase(std::remove_if(leaders.begin(), leaders.end(), malformed), leaders.end());
  std::sort(leaders.begin(), leaders.end());
  if (active && !malformed(*active)) {
    leaders.erase(std::remove(leaders.begin(), leaders.end(), *active), leaders.end());
    leaders.insert(leaders.begin(), *active);
  }
  if (leaders.size() > LeaderAddresses::kMax) leaders.resize(LeaderAddresses::kMax);
  if (leaders.empty()) {
    return absl::NotFoundError(absl::StrCat("no leader of HA job ", name,
                                            " is registered in etcd at ", endpoints,
                                            ": start one (muster serve --ha-etcd ", endpoints,
                                            " --ha-name ", name, "), or check the name"));
  }
  return leaders;
}

uint64_t EtcdReadAuthentications() { return TokenCache::Get().authentications(); }

absl::StatusOr<std::vector<std::string>> ReadHaLeadersThroughGateway(absl::string_view url,
                                                                     absl::Duration timeout) {
  return ReadHaLeadersThroughGateway(url, timeout, EtcdSecurityFromEnv());
}

absl::StatusOr<std::vector<std::string>> ReadHaLeadersThroughGateway(absl::string_view url,
                                                                     absl::Duration timeout,
                                                                     EtcdSecurity given) {
  absl::StatusOr<EtcdLeaderUrl> parsed = ParseEtcdLeaderUrl(url);
  if (!parsed.ok()) return parsed.status();
  absl::StatusOr<EtcdSecurity> security = CheckEtcdSecurity(std::move(given), parsed->tls);
  if (!security.ok()) return security.status();
  // Both ranges in one transaction: at one revision.
  const std::string prefix = HaLeadersPrefix(parsed->name);
  const std::string body = absl::StrCat(
      R"({"success":[{"request_range":{"key":")", absl::Base64Escape(prefix), R"(","range_end":")",
      absl::Base64Escape(PrefixEnd(prefix)), R"(","limit":)", kMaxRegistered,
      R"(}},{"request_range":{"key":")", absl::Base64Escape(HaLeaderKey(parsed->name)), R"("}}]})");
  const std::string endpoints = absl::StrJoin(parsed->endpoints, ",");
  // (The password's hash in the key: another password for the same user gets no token of its.)
  const std::string tokens_key = absl::StrCat(security->user, "@", endpoints, "#",
                                              absl::Hash<std::string>()(security->password));
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status last = absl::DeadlineExceededError("no time to ask");
  // Every member in turn (a member down or cut off), again until the time is up.
  for (size_t i = 0; absl::Now() < deadline; ++i) {
    const std::string& endpoint = parsed->endpoints[i % parsed->endpoints.size()];
    const absl::Duration left = deadline - absl::Now();
    auto answer =
        AskMember(endpoint, *security, tokens_key, body, std::min(left, absl::Seconds(1)));
    if (answer.ok()) {
      return OrderHaLeaders(std::move(answer->first), answer->second, parsed->name, endpoints);
    }
    last = answer.status();
    // An answer, not a member down:
    if (!absl::IsUnavailable(last) && !absl::IsDeadlineExceeded(last)) return last;
    if ((i + 1) % parsed->endpoints.size() == 0 && absl::Now() < deadline) {
      absl::SleepFor(std::min(deadline - absl::Now(), absl::Milliseconds(100)));
    }
  }
  return absl::UnavailableError(
      absl::StrCat("cannot read the leaders of ", url, ": no etcd member ", "answered within ",
                   absl::FormatDuration(timeout), " (", last.message(), ")"));
}

absl::StatusOr<std::vector<std::string>> AwaitHaLeaders(absl::string_view url,
                                                        absl::Duration timeout, bool wait) {
  const absl::Time end = absl::Now() + timeout;
  while (true) {
    const absl::Duration left = std::max(end - absl::Now(), absl::Milliseconds(100));
    absl::StatusOr<std::vector<std::string>> leaders = ReadHaLeadersThroughGateway(url, left);
    // Only what may change by waiting is asked again: no etcd member up yet, no leader yet.
    if (leaders.ok() || !wait || absl::Now() >= end ||
        !(absl::IsUnavailable(leaders.status()) || absl::IsNotFound(leaders.status()))) {
      return leaders;
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

}  // namespace muster
