#include "muster/net/ha/ha_leader.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <utility>

#include <absl/strings/str_cat.h>
#include <google/protobuf/util/message_differencer.h>
#include <caf/io/middleman.hpp>

#include "muster/net/ha/etcd_state_store.h"
#include "muster/net/ha/ha_front_actor.h"
#include "muster/net/leader/leader_endpoint.h"

namespace muster {
namespace {

constexpr absl::Duration kEtcdCallTimeout = absl::Seconds(2);

std::string PolicyOf(const CoordinatorOptions& options) {
  return options.policy ? options.policy->Describe() : "default";
}

// The first leader of an HA name records its configuration; every later one must run the same
// (a standby that takes over serves the job with its own options).
absl::Status CheckConfiguration(const EtcdClient& etcd, const std::string& name,
                                const CoordinatorOptions& options) {
  const std::string config_key = HaPrefix(name) + "config";
  const std::string policy_key = HaPrefix(name) + "policy";
  etcdserverpb::TxnRequest txn;
  for (const std::string* key : {&config_key, &policy_key}) {
    auto* absent = txn.add_compare();
    absent->set_key(*key);
    absent->set_target(etcdserverpb::Compare::CREATE);
    absent->set_result(etcdserverpb::Compare::EQUAL);
    absent->set_create_revision(0);
    txn.add_failure()->mutable_request_range()->set_key(*key);
  }
  auto* put_config = txn.add_success()->mutable_request_put();
  put_config->set_key(config_key);
  put_config->set_value(options.config.SerializeAsString());
  auto* put_policy = txn.add_success()->mutable_request_put();
  put_policy->set_key(policy_key);
  put_policy->set_value(PolicyOf(options));
  absl::StatusOr<etcdserverpb::TxnResponse> done = etcd.Txn(txn, kEtcdCallTimeout);
  if (!done.ok()) return done.status();
  if (done->succeeded()) return absl::OkStatus();
  proto::CoordinationServiceConfig recorded;
  std::string policy;
  const auto& config_range = done->responses(0).response_range();
  const auto& policy_range = done->responses(1).response_range();
  if (config_range.kvs_size() == 1) recorded.ParseFromString(config_range.kvs(0).value());
  if (policy_range.kvs_size() == 1) policy = policy_range.kvs(0).value();
  if (google::protobuf::util::MessageDifferencer::Equivalent(recorded, options.config) &&
      policy == PolicyOf(options)) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "HA job ", name,
      " runs another configuration (jobs, limits, timeouts or policy: its "
      "first leader recorded policy ",
      policy, " and its options in etcd under ", HaPrefix(name),
      "): give every leader of the job the same options, or another --ha-name for another job"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<HaLeader>> HaLeader::Start(caf::actor_system& system,
                                                          CoordinatorOptions options,
                                                          LeaderEndpoint endpoint, HaOptions ha) {
  if (absl::Status name = CheckHaName(ha.name); !name.ok()) return name;
  if (!options.state_dir.empty()) {
    return absl::InvalidArgumentError(
        "an HA leader keeps the job's state in etcd: give --ha-etcd or --state-dir, not both");
  }
  if (ha.lease_ttl < absl::Seconds(1) ||
      absl::Trunc(ha.lease_ttl, absl::Seconds(1)) != ha.lease_ttl) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the HA lease TTL must be whole seconds, at least 1s (etcd counts it in seconds), not ",
        absl::FormatDuration(ha.lease_ttl)));
  }
  // etcd takes requests up to 1.5 MiB by default: a value must fit in one with its record.
  if (options.config.max_value_bytes() == 0) options.config.set_max_value_bytes(kHaMaxValueBytes);
  absl::StatusOr<std::vector<std::string>> endpoints = ParseEtcdEndpoints(ha.etcd);
  if (!endpoints.ok()) return endpoints.status();
  absl::StatusOr<EtcdSecurity> security = CheckEtcdSecurity(
      ha.etcd_security.value_or(EtcdSecurityFromEnv()), EtcdEndpointsUseTls(ha.etcd));
  if (!security.ok()) return security.status();
  absl::StatusOr<std::shared_ptr<EtcdClient>> etcd = EtcdClient::Connect(
      {.endpoints = *std::move(endpoints), .member = ha.etcd_member, .security = *security});
  if (!etcd.ok()) return etcd.status();
  if (absl::Status same = CheckConfiguration(**etcd, ha.name, options); !same.ok()) return same;
  auto leader = std::unique_ptr<HaLeader>(new HaLeader(
      system, std::move(options), std::move(endpoint), std::move(ha), *std::move(etcd)));
  leader->front_ = SpawnHaFront(system, leader->ha_.name);
  absl::StatusOr<uint16_t> port =
      PublishCoordinator(system, leader->front_, leader->endpoint_.port, leader->endpoint_.host);
  if (!port.ok()) {
    caf::anon_send_exit(leader->front_, caf::exit_reason::user_shutdown);
    leader->role_ = HaRole::kStopped;
    leader->failures_->Forget();
    return port.status();
  }
  leader->port_ = *port;
  if (leader->ha_.advertise.empty()) {
    // Listening everywhere, it is reached by this host's name: 127.0.0.1 would send the agents
    // of other hosts to themselves, and every such leader would register the same address.
    std::string host = leader->endpoint_.host;
    if (host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]") {
      char name[256] = {};
      host = gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0' ? std::string(name)
                                                                         : "127.0.0.1";
    }
    leader->advertise_ = absl::StrCat(host, ":", leader->port_);
  } else {
    leader->advertise_ = leader->ha_.advertise;
  }
  leader->election_ = EtcdElection(leader->etcd_, leader->ha_.name, leader->advertise_,
                                   absl::ToInt64Seconds(leader->ha_.lease_ttl), kEtcdCallTimeout);
  leader->campaign_ = std::thread([raw = leader.get()] { raw->Campaign(); });
  return leader;
}

HaLeader::HaLeader(caf::actor_system& system, CoordinatorOptions options, LeaderEndpoint endpoint,
                   HaOptions ha, std::shared_ptr<EtcdClient> etcd)
    : system_(system),
      options_(std::move(options)),
      endpoint_(std::move(endpoint)),
      ha_(std::move(ha)),
      etcd_(std::move(etcd)),
      election_(etcd_, ha_.name, "", 1) {
  endpoint_.publish = false;  // the front is published; the leader behind it is not
  failures_->owner = this;
}

HaLeader::~HaLeader() { Stop(); }

uint64_t HaLeader::FailureSink::NewTerm() {
  std::lock_guard<std::mutex> lock(mutex);
  return ++term;
}

void HaLeader::FailureSink::Forget() {
  std::lock_guard<std::mutex> lock(mutex);
  owner = nullptr;
}

void HaLeader::FailureSink::Report(uint64_t of_term, std::string problem) {
  std::lock_guard<std::mutex> lock(mutex);
  if (owner == nullptr || of_term != term) return;
  {
    std::lock_guard<std::mutex> owner_lock(owner->mutex_);
    owner->store_problem_ = std::move(problem);
  }
  owner->changed_.notify_all();
}

absl::Time HaLeader::StepDownAt() const { return election_.lease_deadline() - ha_.lease_ttl / 4; }

void HaLeader::Tell(const std::string& line, absl::FunctionRef<void()> change) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    change();
    said_ = line;
  }
  changed_.notify_all();
  if (ha_.on_role) ha_.on_role(line);
}

void HaLeader::Campaign() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    absl::Duration wait = Step();
    lock.lock();
    changed_.wait_for(lock, absl::ToChronoNanoseconds(wait),
                      [this] { return stopping_ || !store_problem_.empty(); });
  }
}

absl::Duration HaLeader::Step() {
  bool active;
  std::string store_problem;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    active = leader_ != nullptr;
    store_problem = std::move(store_problem_);
    store_problem_.clear();
  }
  if (active) {
    if (!store_problem.empty()) {
      // The writer fails every change after a failed one: the job is better served by another
      // leader (or by this one, started afresh from what etcd has).
      StepDown(absl::StrCat("could not write the job's state (", store_problem, ")"));
      election_.Resign();
      // Another leader, which loads the state afresh, campaigns first.
      return std::max(ha_.campaign_interval, ha_.lease_ttl / 2);
    }
    // Not refreshed in time: step down a quarter TTL before the lease may end, so that this
    // leader no longer answers once a standby may serve. A refresh never waits past that.
    const absl::Duration left = StepDownAt() - absl::Now();
    absl::Status kept = left > absl::ZeroDuration()
                            ? election_.KeepAlive(left)
                            : absl::DeadlineExceededError("the lease was not refreshed in time");
    const absl::Duration still = StepDownAt() - absl::Now();
    if (absl::IsNotFound(kept) || still <= absl::ZeroDuration()) {
      StepDown(absl::StrCat("lost its etcd lease (",
                            kept.ok() ? "not refreshed in time" : std::string(kept.message()),
                            ")"));
      // A new term, if any, under a new lease, key and fence. Revoking the old lease (when etcd
      // answers: a leader that was paused, or slow) frees the key for a standby at once.
      election_.Resign(ha_.lease_ttl / 4);
      return ha_.campaign_interval;
    }
    // After a failed refresh, the next one comes before the margin runs out.
    return kept.ok() ? ha_.lease_ttl / 4 : std::min(ha_.lease_ttl / 4, still);
  }
  absl::StatusOr<LeaderClaim> claim = election_.Campaign();
  if (!claim.ok()) {
    std::string problem(claim.status().message());
    if (problem != last_problem_) Tell(absl::StrCat("standby: cannot campaign: ", problem));
    last_problem_ = problem;
    // A user or password etcd refuses (changed in etcd since the start) stays refused, and each
    // try costs etcd a password check: tried less and less often.
    if (absl::IsInvalidArgument(claim.status()) || absl::IsPermissionDenied(claim.status())) {
      ++refused_campaigns_;
      return std::min(ha_.campaign_interval * (1 << std::min(refused_campaigns_, 10)),
                      absl::Seconds(10));
    }
    refused_campaigns_ = 0;
    return ha_.campaign_interval;
  }
  refused_campaigns_ = 0;
  if (election_.won(*claim)) {
    if (TakeOver(*claim)) {
      last_problem_.clear();
      failed_takeovers_ = 0;
      return ha_.lease_ttl / 4;
    }
    // Another leader may do better; this one tries again later, less and less often.
    ++failed_takeovers_;
    return std::min(ha_.campaign_interval * (1 << std::min(failed_takeovers_, 6)),
                    absl::Seconds(10));
  }
  last_problem_.clear();
  // The key of this leader's own previous life (a restart on the same address within the TTL)
  // names no live leader: agents must not be sent back here.
  std::string holder = claim->holder == advertise_ ? std::string() : claim->holder;
  // Only the campaign's thread changes active_: read here, it stays so until the Tell below.
  if (active_leader() != holder) {
    Tell(holder.empty() ? std::string("standby: no leader is active")
                        : absl::StrCat("standby: the active leader is ", holder),
         [&] {
           // The front first (a message, sent at once): whoever reads the new active leader
           // here finds the front naming it too.
           TellHaFrontStandby(front_, holder);
           active_ = holder;
         });
  }
  return ha_.campaign_interval;
}

bool HaLeader::TakeOver(const LeaderClaim& claim) {
  // Loading a large state takes a while: the lease is kept alive meanwhile from a thread of
  // its own (the client is thread-safe; the election object is not).
  std::atomic<bool> started{false};
  const int64_t lease = election_.lease();
  std::thread keeper([&] {
    absl::Time next = absl::Now() + ha_.lease_ttl / 4;
    while (!started.load()) {
      if (absl::Now() >= next) {
        (void)etcd_->LeaseKeepAliveOnce(lease, ha_.lease_ttl / 4);
        next = absl::Now() + ha_.lease_ttl / 4;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  EtcdStateOptions store_options{.name = ha_.name, .fence = election_.Fence(claim)};
  // The writer may outlive this term (a write blocked while etcd is away) and this object: it
  // reports through the sink, which forgets a term once it ended.
  const uint64_t term = failures_->NewTerm();
  store_options.on_failure = [sink = failures_, term](const absl::Status& status) {
    sink->Report(term, std::string(status.message()));
  };
  std::shared_ptr<EtcdStateStore> store = EtcdStateStore::Open(etcd_, std::move(store_options));
  LeaderEndpoint endpoint = endpoint_;
  if (endpoint.http) endpoint.http->leader_address = advertise_;  // the page's, not HOST:0
  absl::StatusOr<std::unique_ptr<Leader>> started_leader =
      Leader::Start(system_, options_, endpoint, store);
  // The lease as it is now: a load that outlasted it (the keeper's refreshes failing) must not
  // serve.
  absl::Status kept = started_leader.ok() ? election_.KeepAlive() : absl::OkStatus();
  started = true;
  keeper.join();
  if (started_leader.ok() && (!kept.ok() || absl::Now() >= StepDownAt())) {
    (*started_leader)->Stop();
    started_leader = absl::UnavailableError(absl::StrCat(
        "its etcd lease ended while it loaded the state (",
        kept.ok() ? std::string("not refreshed in time") : std::string(kept.message()), ")"));
  }
  if (!started_leader.ok()) {
    std::string problem(started_leader.status().message());
    if (problem != last_problem_) {
      Tell(absl::StrCat("standby: won the election but cannot serve: ", problem));
    }
    last_problem_ = problem;
    election_.Resign();
    return false;
  }
  TellHaFrontActive(front_, (*started_leader)->published());
  std::string recovered = (*started_leader)->recovery();
  const std::string http = (*started_leader)->http_url();
  // With the role: whoever sees it active reads why.
  Tell(absl::StrCat("active: serving HA job ", ha_.name, " at ", advertise_, "; ", recovered,
                    http.empty() ? "" : "; http ", http),
       [&] {
         leader_ = *std::move(started_leader);
         role_ = HaRole::kActive;
         active_ = advertise_;
         recovery_ = recovered;
       });
  return true;
}

void HaLeader::StepDown(const std::string& why) {
  // A new front: the agents watch the one they reached, and its end sends them to look for the
  // active leader again (the old front would keep their connections and answer as a standby).
  failures_->NewTerm();  // what this term's writer reports from now on is of no concern
  CoordinatorActor old = front_;
  front_ = SpawnHaFront(system_, ha_.name);
  UnpublishCoordinator(system_, old, port_);
  absl::StatusOr<uint16_t> port = PublishCoordinator(system_, front_, port_, endpoint_.host);
  caf::anon_send_exit(old, caf::exit_reason::user_shutdown);
  std::unique_ptr<Leader> leader;
  Tell(absl::StrCat("standby: stepped down: this leader ", why), [&] {
    leader = std::move(leader_);
    role_ = port.ok() ? HaRole::kStandby : HaRole::kStopped;
    active_.clear();
    if (!port.ok()) stopping_ = true;  // unreachable: campaigning would win the job for nobody
  });
  // It serves no more from here on (its front answers as a standby). Its state writer may be
  // blocked in a write to an etcd it cannot reach, which ends only with the write's timeout:
  // the campaign does not wait that long.
  if (leader) leader->Stop(std::min(ha_.lease_ttl / 2, absl::Seconds(5)));
  if (!port.ok()) {
    election_.Resign();
    Tell(absl::StrCat("stopped: cannot publish on port ", port_, " again (",
                      port.status().message(), "); restart this leader"));
    if (ha_.on_stopped) ha_.on_stopped(port.status());
  }
}

void HaLeader::Stop() {
  bool stopped_already;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_called_) return;
    stop_called_ = true;
    stopping_ = true;
    // It never started (Start failed), or stopped on its own (StepDown could not publish its
    // port again): its campaign has ended or never ran, and it was told so.
    stopped_already = role_ == HaRole::kStopped;
  }
  changed_.notify_all();
  // Joined in every case: a thread left joinable would end the process when this is destroyed.
  if (campaign_.joinable() && campaign_.get_id() != std::this_thread::get_id()) campaign_.join();
  if (stopped_already) {
    caf::anon_send_exit(front_, caf::exit_reason::user_shutdown);
    return;
  }
  std::unique_ptr<Leader> leader;
  const std::string line = absl::StrCat("stopped: this leader of HA job ", ha_.name,
                                        " was stopped; it neither serves nor campaigns");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    leader = std::move(leader_);
    role_ = HaRole::kStopped;
    said_ = line;  // with the role, as Tell does; told once the leader has stopped, below
  }
  failures_->Forget();
  TellHaFrontStandby(front_, "");
  if (leader) leader->Stop();
  election_.Resign();  // a standby takes over now, not after the lease's TTL
  if (port_ != 0) UnpublishCoordinator(system_, front_, port_);
  caf::anon_send_exit(front_, caf::exit_reason::user_shutdown);
  changed_.notify_all();
  // The campaign has ended: this is the last line, after every line it told.
  if (ha_.on_role) ha_.on_role(line);
}

HaRole HaLeader::role() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return role_;
}

std::string HaLeader::active_leader() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return active_;
}

std::string HaLeader::recovery() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return recovery_;
}

std::string HaLeader::said() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return said_;
}

std::string HaLeader::http_url() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return leader_ ? leader_->http_url() : std::string();
}

CoordinatorActor HaLeader::coordinator() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return leader_ ? leader_->coordinator() : CoordinatorActor{};
}

bool HaLeader::AwaitActive(absl::Duration timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  // (A stopped leader will not become active: no need to wait.)
  changed_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                    [this] { return role_ == HaRole::kActive || stopping_; });
  return role_ == HaRole::kActive;
}

}  // namespace muster
