// A test bed of hosts on one machine: N Linux network namespaces ("hosts") on one bridge, each
// with an address of the benchmarking range 198.18.0.0/15 (host i is 198.18.0.(10 + i)), and
// the faults a datacenter network has, made with nftables in the hosts (this kernel has no
// netem): random loss per host and direction, partitions (one host from another or from all,
// both ways or one way); latency and jitter through a relay (tests/netbed/relay.py) that holds
// each segment for the configured time.
//
// Everything lives in namespaces of this bed (the bridge too, in a namespace of its own), so
// deleting them removes every veth, address and rule; nothing is added to the machine's own
// namespace. The bed tears itself down when destroyed, and a watchdog process does it (killing
// what still runs in the hosts) if the test process dies first, even by SIGKILL. Creating a bed
// needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN); Unavailable() says why a machine cannot.
//
//   bed: CREATED --faults set/cleared--> CREATED --destroyed (or the test died)--> GONE
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

namespace muster::netbed {

class NetBed {
 public:
  // Empty when this machine can create a bed; otherwise why not (for GTEST_SKIP).
  static std::string Unavailable();

  // `hosts` hosts (1..200). Possible errors: FailedPrecondition (Unavailable()), Internal (a
  // command failed, naming it and its output; what was made is torn down).
  static absl::StatusOr<std::unique_ptr<NetBed>> Create(int hosts);
  ~NetBed();
  NetBed(const NetBed&) = delete;
  NetBed& operator=(const NetBed&) = delete;

  int hosts() const { return hosts_; }
  // 198.18.0.(10 + host).
  static std::string Address(int host);
  const std::string& Namespace(int host) const { return names_[host]; }
  // `argv` as run in `host`: ip netns exec NAMESPACE argv...
  std::vector<std::string> In(int host, std::vector<std::string> argv) const;

  // Drops `percent` (0..100) of what `host` sends to the bridge, chosen at random per packet.
  absl::Status SetLoss(int host, int percent);
  // Drops what `from` sends to `to` (one way); Partition cuts both ways.
  absl::Status Block(int from, int to);
  absl::Status Partition(int a, int b);
  // Cuts `host` from every other host, both ways.
  absl::Status Isolate(int host);
  // Limits what `host` sends and receives to `bytes_per_second` each way (tc tbf on both ends of
  // its link; 0: no limit).
  absl::Status SetRate(int host, int64_t bytes_per_second);
  // Removes every fault of every host (loss and partitions; not rates).
  absl::Status HealAll();

  // The command of a relay (tests/netbed/relay.py) listening on `listen` (HOST:PORT) and
  // forwarding to `to` after `delay_ms` plus up to `jitter_ms` each way, at most `rate` bytes a
  // second (0: no limit). Run it in a host with In(); it prints "relay ready".
  static std::vector<std::string> Relay(const std::string& listen, const std::string& to,
                                        int delay_ms, int jitter_ms = 0, int64_t rate = 0);

 private:
  NetBed(int hosts, std::string prefix);
  absl::Status Build();
  absl::Status Apply(int host);
  void TearDown();

  const int hosts_;
  const std::string prefix_;
  std::vector<std::string> names_;  // the hosts' namespaces
  std::string switch_;              // the bridge's namespace
  std::vector<int> loss_;
  std::set<std::pair<int, int>> blocked_;  // (from, to)
  pid_t watchdog_ = -1;
  bool torn_down_ = false;
};

}  // namespace muster::netbed
