// A leader with standbys, on etcd (docs/operations.md, "High availability"): several processes,
// on several hosts, run the same job under one HA name. Each publishes a front on its port
// (ha_front_actor.h; a new one after each step down) and campaigns for the job's leader key on
// etcd (etcd_election.h); the one
// that holds it loads the job's state from etcd, starts the coordinator (net/leader/leader.h)
// behind its front and writes every change to etcd, fenced on its key, before acknowledging
// it. The others stand by: their fronts answer every call with Unavailable naming the active
// leader, and they campaign again every `campaign_interval`. When the active leader's host dies
// or is cut off, its lease ends after its TTL and a standby takes over with the job's service
// incarnation: the tasks reconnect to it as to a restarted durable leader.
//
//   STANDBY --won the key: state loaded, coordinator started--> ACTIVE
//   STANDBY --won, but the state did not load--> STANDBY (resigned; says why once, tries again
//            less and less often, up to every 10 s)
//   ACTIVE --lease gone (etcd said so, or not refreshed until a quarter TTL before its end), or a
//            write of the state failed--> STANDBY (coordinator stopped as a pause: waiting calls
//            are re-sent by the agents; a new front, so that the agents look for the active
//            leader again; resigned after a failed write)
//   any --Stop--> STOPPED (resigns at once: a standby takes over without waiting out the TTL)
//
// The campaign runs on a thread of its own (etcd's calls block); the actors are CAF's.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <absl/functional/function_ref.h>
#include <absl/status/statusor.h>
#include <absl/time/time.h>
#include <caf/actor_system.hpp>

#include "muster/net/ha/etcd/etcd_client.h"
#include "muster/net/ha/etcd_election.h"
#include "muster/net/leader/leader.h"

namespace muster {

struct HaOptions {
  // etcd's members, "HOST:PORT,HOST:PORT" (ParseEtcdEndpoints).
  std::string etcd;
  // The job's HA name: every leader of the job gives the same one (CheckHaName).
  std::string name;
  // How long the active leader's lease lasts without a refresh, in whole seconds: a dead leader
  // is replaced after about this long. (etcd raises a TTL below about 1.5 times its election
  // timeout to that.)
  absl::Duration lease_ttl = absl::Seconds(2);
  // How often a standby campaigns.
  absl::Duration campaign_interval = absl::Milliseconds(100);
  // The address the agents reach this leader at, HOST:PORT (the key's value while it is
  // active). Empty: the endpoint's host and port (this host's name, gethostname, when it
  // listens everywhere).
  std::string advertise;
  // Told each change of role, as a line for a log (from the campaign's thread; the last, when
  // stopped, from Stop()'s).
  std::function<void(const std::string&)> on_role;
  // Told when the leader stopped campaigning on its own (it could not publish its port again):
  // the process should end and be started again.
  std::function<void(const absl::Status&)> on_stopped;
  // How etcd's members are reached (EtcdOptions::member): empty, through etcd's JSON gateway;
  // `muster serve` gives NewEtcdGrpcMember (net/ha/etcd/etcd_grpc_member.h).
  EtcdMemberFactory etcd_member;
  // TLS to etcd and etcd's user (ha_leader_registry.h's EtcdSecurity): unset, from the
  // environment (EtcdSecurityFromEnv: MUSTER_ETCD_CACERT, ...). https:// endpoints turn TLS on.
  std::optional<EtcdSecurity> etcd_security;
};

enum class HaRole { kStandby, kActive, kStopped };

// An HA leader's largest value when the configuration sets none (etcd's default request limit
// is 1.5 MiB; the 4 MiB of a leader without etcd would not fit).
inline constexpr int64_t kHaMaxValueBytes = 1 << 20;

class HaLeader {
 public:
  // Connects to etcd, checks that the job's configuration is the one the HA name was first
  // started with (options.config, and the policy), publishes the front and starts
  // campaigning. Possible errors: InvalidArgument (the name, the endpoints, a lease TTL that
  // is not whole seconds of at least 1, a state dir given as well), Unavailable (no etcd member
  // answered, naming them; the port cannot be opened), FailedPrecondition (another configuration
  // runs under this name).
  static absl::StatusOr<std::unique_ptr<HaLeader>> Start(caf::actor_system& system,
                                                         CoordinatorOptions options,
                                                         LeaderEndpoint endpoint, HaOptions ha);
  ~HaLeader();
  HaLeader(const HaLeader&) = delete;
  HaLeader& operator=(const HaLeader&) = delete;

  // Stops campaigning; an active leader stops its coordinator and resigns. Idempotent.
  void Stop();

  HaRole role() const;
  // Whom etcd named active at the last campaign ("" when nobody; this leader's address when it
  // is active).
  std::string active_leader() const;
  // Waits until this leader is active; false after `timeout`, or at once once it stops (Stop(),
  // or it could not publish its port again: role() kStopped).
  bool AwaitActive(absl::Duration timeout) const;
  // The coordinator while active (null otherwise).
  CoordinatorActor coordinator() const;
  // What the last takeover recovered, in one line.
  std::string recovery() const;
  // The HTTP endpoint's URL while active and given one (LeaderEndpoint::http: a standby serves
  // none); "" otherwise.
  std::string http_url() const;
  // The last line it told (HaOptions::on_role's: its role and why, e.g. "standby: won the
  // election but cannot serve: ..."); "" before the first.
  std::string said() const;

  uint16_t port() const { return port_; }
  // HOST:PORT, as etcd names this leader.
  const std::string& address() const { return advertise_; }
  const std::string& name() const { return ha_.name; }

 private:
  HaLeader(caf::actor_system& system, CoordinatorOptions options, LeaderEndpoint endpoint,
           HaOptions ha, std::shared_ptr<EtcdClient> etcd);
  void Campaign();
  // One step of the campaign; returns how long to wait before the next.
  absl::Duration Step();
  // False when the state did not load or the leader did not start (resigned then).
  bool TakeOver(const LeaderClaim& claim);
  void StepDown(const std::string& why);
  // Says `line` (said(), HaOptions::on_role). `change`, run under the same lock, changes the
  // role or the active leader the line tells of, so that no reader sees one without the other.
  void Tell(
      const std::string& line, absl::FunctionRef<void()> change = [] {});
  // When the active leader steps down unless its lease was refreshed: a quarter TTL before the
  // lease may end, so that it no longer answers once a standby may serve.
  absl::Time StepDownAt() const;

  // Where the state writer reports a failed write. Shared with the writer, which may outlive a
  // term and this object: a report of an ended term (or after Stop) is dropped.
  struct FailureSink {
    std::mutex mutex;
    HaLeader* owner = nullptr;
    uint64_t term = 0;
    uint64_t NewTerm();
    void Forget();
    void Report(uint64_t of_term, std::string problem);
  };

  caf::actor_system& system_;
  const CoordinatorOptions options_;
  LeaderEndpoint endpoint_;
  HaOptions ha_;
  std::shared_ptr<EtcdClient> etcd_;
  EtcdElection election_;
  CoordinatorActor front_;
  uint16_t port_ = 0;
  std::string advertise_;

  mutable std::mutex mutex_;  // guards what follows, read by other threads
  mutable std::condition_variable changed_;
  HaRole role_ = HaRole::kStandby;
  std::string active_;
  std::string recovery_;
  std::string said_;                // the last line told
  std::unique_ptr<Leader> leader_;  // while active
  bool stopping_ = false;
  bool stop_called_ = false;
  std::string store_problem_;  // set by the store's writer when a write failed
  // The campaign thread's own:
  std::string last_problem_;   // the last campaign error told, not repeated
  int failed_takeovers_ = 0;   // in a row
  int refused_campaigns_ = 0;  // campaigns in a row etcd refused the user of
  std::shared_ptr<FailureSink> failures_ = std::make_shared<FailureSink>();
  std::thread campaign_;
};

}  // namespace muster
