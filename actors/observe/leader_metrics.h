// The leader's counters and histograms: what its actors count as they work (KV operations and
// their latency, task events, durable writes, refused requests), read by the HTTP endpoint's
// scrapes (net/observe/). Lock-free: an update is a relaxed atomic add, so counting costs an
// actor no wait and no allocation, and a scrape never stops an actor. Gauges of the job's shape
// (tasks by state, open barriers, keys stored) are not kept here: they are read from the actors
// that own them when a snapshot is taken (job_observer_actor.h).
//
// One LeaderMetrics per leader (muster::Leader makes it); every actor that counts holds a
// shared_ptr to it, null when nothing is counted (actors spawned alone in tests).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <absl/status/status.h>
#include <absl/strings/string_view.h>
#include <absl/types/span.h>

#include "muster/messages/vocabulary/kv_calls.h"
#include "muster/proto/observe.pb.h"

namespace muster {

class MetricCounter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Observations counted into buckets of fixed upper bounds, as Prometheus histograms are: a
// reading's bucket i counts the observations <= bounds[i] (cumulative), +Inf being `count`.
class MetricHistogram {
 public:
  explicit MetricHistogram(std::vector<double> bounds);
  MetricHistogram(const MetricHistogram&) = delete;
  MetricHistogram& operator=(const MetricHistogram&) = delete;

  void Observe(double value);
  void ObserveDuration(std::chrono::nanoseconds duration) {
    Observe(std::chrono::duration<double>(duration).count());
  }

  struct Reading {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // one per bound
    uint64_t count = 0;
    double sum = 0;
  };
  Reading Read() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1 (the last: +Inf)
  std::atomic<uint64_t> count_{0};
  std::atomic<int64_t> sum_micro_{0};  // the sum in millionths, so that it adds atomically
};

// The key-value verbs: X(Verb, the `verb` label that names it), in the order the metrics show
// them. The calls of MUSTER_KV_CALLS (kv_calls.h), and the watches.
#define MUSTER_KV_VERBS(X) \
  MUSTER_KV_CALLS(X)       \
  X(WatchKey, "watch")     \
  X(StopWatchKey, "stop_watch")

// KvVerb::k<Verb>, e.g. KvVerb::kInsertKeyValue.
// clang-format off
enum class KvVerb : int {
#define MUSTER_KV_VERB_ENUMERATOR(Verb, label) k##Verb,
  MUSTER_KV_VERBS(MUSTER_KV_VERB_ENUMERATOR)
#undef MUSTER_KV_VERB_ENUMERATOR
  kCount,
};
// clang-format on
absl::string_view KvVerbName(KvVerb verb);

namespace kv_verbs_internal {
#define MUSTER_KV_VERB_OF(Verb, label) \
  constexpr KvVerb VerbOf(const proto::Verb##Request*) { return KvVerb::k##Verb; }
MUSTER_KV_VERBS(MUSTER_KV_VERB_OF)
#undef MUSTER_KV_VERB_OF
}  // namespace kv_verbs_internal

// The verb of a key-value request type, e.g. KvVerbOf<proto::InsertKeyValueRequest>().
template <class Request>
constexpr KvVerb KvVerbOf() {
  return kv_verbs_internal::VerbOf(static_cast<const Request*>(nullptr));
}

// Why a request was refused before it reached the coordinator (the token gate), or a
// connection was closed by the wire guard.
enum class Refusal : int {
  kWrongToken,          // AuthenticateRequest with a token that does not match
  kUnauthenticated,     // a request from a node that has not presented the token
  kPermissionDenied,    // a certificate that may not act as the task or launcher it names
  kInternalMessage,     // one of the coordinator's internal messages from another node
  kFrameRejected,       // the wire guard refused a frame (size, kind, target)
  kHandshakeTimeout,    // a connection that did not complete its handshake in time
  kTooManyConnections,  // a peer address over its connection limit, or no descriptor left
  kTlsFailed,           // the TLS handshake failed
  kCount,
};
absl::string_view RefusalName(Refusal refusal);

class LeaderMetrics {
 public:
  LeaderMetrics();
  LeaderMetrics(const LeaderMetrics&) = delete;
  LeaderMetrics& operator=(const LeaderMetrics&) = delete;

  // A key-value request answered with `code` after `latency` (for a blocked get, its wait).
  void KvDone(KvVerb verb, absl::StatusCode code, std::chrono::nanoseconds latency);
  // A job event (proto/observe.proto): registrations, failures by cause, restarts, rounds,
  // barriers passed and failed (and how long each waited), preemptions, stuck tasks.
  void CountEvent(const proto::JobEvent& event);
  // An open barrier instance ended after `waited` (its first arrival to its end).
  void BarrierEnded(std::chrono::nanoseconds waited);
  // One synced write of the state dir: `batches` batches, `changes` puts and deletes.
  void DurableWrite(std::chrono::nanoseconds took, size_t batches, size_t changes);
  void Refused(Refusal why) { refused_[static_cast<int>(why)].Add(); }

  uint64_t kv_operations(KvVerb verb, bool ok) const {
    return (ok ? kv_ok_ : kv_failed_)[static_cast<int>(verb)].value();
  }
  const MetricHistogram& kv_latency(KvVerb verb) const {
    return *kv_latency_[static_cast<int>(verb)];
  }
  // Task failures by the absl code of their cause (index: the code, 0..16).
  uint64_t task_failures(absl::StatusCode code) const;
  uint64_t events(proto::JobEventKind kind) const;
  const MetricHistogram& barrier_wait() const { return barrier_wait_; }
  const MetricHistogram& durable_write() const { return durable_write_; }
  // Batches per synced write (the group commit's size).
  const MetricHistogram& durable_group_size() const { return durable_group_size_; }
  uint64_t durable_changes() const { return durable_changes_.value(); }
  uint64_t refused(Refusal why) const { return refused_[static_cast<int>(why)].value(); }

  // Bucket bounds: latencies from 10 µs to 10 s, counts from 1 to 4096.
  static std::vector<double> LatencyBounds();
  static std::vector<double> SizeBounds();

 private:
  static constexpr int kVerbs = static_cast<int>(KvVerb::kCount);
  static constexpr int kCodes = 17;  // absl::StatusCode 0..16
  static constexpr int kKinds = 13;  // JobEventKind 0..12
  std::array<MetricCounter, kVerbs> kv_ok_;
  std::array<MetricCounter, kVerbs> kv_failed_;
  std::array<std::unique_ptr<MetricHistogram>, kVerbs> kv_latency_;
  std::array<MetricCounter, kCodes> failures_;
  std::array<MetricCounter, kKinds> events_;
  MetricHistogram barrier_wait_;
  MetricHistogram durable_write_;
  MetricHistogram durable_group_size_;
  MetricCounter durable_changes_;
  std::array<MetricCounter, static_cast<int>(Refusal::kCount)> refused_;
};

}  // namespace muster
