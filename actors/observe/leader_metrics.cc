#include "muster/actors/observe/leader_metrics.h"

#include <algorithm>
#include <cmath>

namespace muster {

MetricHistogram::MetricHistogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {
  std::sort(bounds_.begin(), bounds_.end());
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void MetricHistogram::Observe(double value) {
  if (std::isnan(value)) return;
  size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  double micro = std::clamp(value * 1e6, -9.2e18, 9.2e18);
  sum_micro_.fetch_add(static_cast<int64_t>(std::llround(micro)), std::memory_order_relaxed);
}

MetricHistogram::Reading MetricHistogram::Read() const {
  Reading reading;
  reading.bounds = bounds_;
  reading.cumulative.reserve(bounds_.size());
  uint64_t total = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    total += buckets_[i].load(std::memory_order_relaxed);
    reading.cumulative.push_back(total);
  }
  // Read as one: the count is the buckets' sum, so +Inf is never below the last bound.
  reading.count = total + buckets_[bounds_.size()].load(std::memory_order_relaxed);
  reading.sum = static_cast<double>(sum_micro_.load(std::memory_order_relaxed)) / 1e6;
  return reading;
}

absl::string_view KvVerbName(KvVerb verb) {
  switch (verb) {
#define MUSTER_KV_VERB_CASE(Verb, label) \
  case KvVerb::k##Verb:                  \
    return label;
    MUSTER_KV_VERBS(MUSTER_KV_VERB_CASE)
#undef MUSTER_KV_VERB_CASE
    case KvVerb::kCount:
      break;
  }
  return "unknown";
}

absl::string_view RefusalName(Refusal refusal) {
  switch (refusal) {
    case Refusal::kWrongToken:
      return "wrong_token";
    case Refusal::kUnauthenticated:
      return "unauthenticated";
    case Refusal::kPermissionDenied:
      return "permission_denied";
    case Refusal::kInternalMessage:
      return "internal_message";
    case Refusal::kFrameRejected:
      return "frame_rejected";
    case Refusal::kHandshakeTimeout:
      return "handshake_timeout";
    case Refusal::kTooManyConnections:
      return "too_many_connections";
    case Refusal::kTlsFailed:
      return "tls_failed";
    case Refusal::kCount:
      break;
  }
  return "unknown";
}

std::vector<double> LeaderMetrics::LatencyBounds() {
  return {1e-5,   2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2,
          2.5e-2, 5e-2,   0.1,  0.25, 0.5,    1,    2.5,  5,      10};
}

std::vector<double> LeaderMetrics::SizeBounds() {
  return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
}

LeaderMetrics::LeaderMetrics()
    : barrier_wait_({1e-3, 1e-2, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800}),
      durable_write_(LatencyBounds()),
      durable_group_size_(SizeBounds()) {
  for (auto& histogram : kv_latency_)
    histogram = std::make_unique<MetricHistogram>(LatencyBounds());
}

void LeaderMetrics::KvDone(KvVerb verb, absl::StatusCode code, std::chrono::nanoseconds latency) {
  int index = static_cast<int>(verb);
  if (index < 0 || index >= kVerbs) return;
  (code == absl::StatusCode::kOk ? kv_ok_ : kv_failed_)[index].Add();
  kv_latency_[index]->ObserveDuration(latency);
}

void LeaderMetrics::CountEvent(const proto::JobEvent& event) {
  int kind = static_cast<int>(event.kind());
  if (kind >= 0 && kind < kKinds) events_[kind].Add();
  if (event.kind() == proto::BARRIER_PASSED || event.kind() == proto::BARRIER_FAILED) {
    BarrierEnded(std::chrono::milliseconds(event.waited_ms()));
  }
  if (event.kind() == proto::TASK_FAILED) {
    int code = event.error_code();
    failures_[code >= 0 && code < kCodes ? code : static_cast<int>(absl::StatusCode::kUnknown)]
        .Add();
  }
}

void LeaderMetrics::BarrierEnded(std::chrono::nanoseconds waited) {
  barrier_wait_.ObserveDuration(waited);
}

void LeaderMetrics::DurableWrite(std::chrono::nanoseconds took, size_t batches, size_t changes) {
  durable_write_.ObserveDuration(took);
  durable_group_size_.Observe(static_cast<double>(batches));
  durable_changes_.Add(changes);
}

uint64_t LeaderMetrics::task_failures(absl::StatusCode code) const {
  int index = static_cast<int>(code);
  return index >= 0 && index < kCodes ? failures_[index].value() : 0;
}

uint64_t LeaderMetrics::events(proto::JobEventKind kind) const {
  int index = static_cast<int>(kind);
  return index >= 0 && index < kKinds ? events_[index].value() : 0;
}

}  // namespace muster
