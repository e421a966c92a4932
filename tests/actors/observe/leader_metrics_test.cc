// LeaderMetrics: histogram buckets and sums, KV counts by verb and result, task failures by the
// code of their cause, events by kind, durable writes.
#include "muster/actors/observe/leader_metrics.h"

#include <gtest/gtest.h>

namespace muster {
namespace {

TEST(MetricHistogramTest, CountsIntoTheFirstBucketThatHoldsTheValue) {
  MetricHistogram histogram({1, 5, 10});
  histogram.Observe(0.5);
  histogram.Observe(1);  // a bound holds its own value (le)
  histogram.Observe(7);
  histogram.Observe(100);
  MetricHistogram::Reading r = histogram.Read();
  EXPECT_EQ(r.cumulative, (std::vector<uint64_t>{2, 2, 3}));
  EXPECT_EQ(r.count, 4u);
  EXPECT_DOUBLE_EQ(r.sum, 108.5);
}

TEST(MetricHistogramTest, NanIsIgnored) {
  MetricHistogram histogram({1});
  histogram.Observe(std::nan(""));
  EXPECT_EQ(histogram.Read().count, 0u);
}

TEST(LeaderMetricsTest, KvDone_CountsByVerbAndResult) {
  LeaderMetrics metrics;
  metrics.KvDone(KvVerb::kTryGetKeyValue, absl::StatusCode::kOk, std::chrono::microseconds(40));
  metrics.KvDone(KvVerb::kTryGetKeyValue, absl::StatusCode::kNotFound, std::chrono::microseconds(40));
  metrics.KvDone(KvVerb::kTryGetKeyValue, absl::StatusCode::kNotFound, std::chrono::microseconds(40));
  EXPECT_EQ(metrics.kv_operations(KvVerb::kTryGetKeyValue, true), 1u);
  EXPECT_EQ(metrics.kv_operations(KvVerb::kTryGetKeyValue, false), 2u);
  EXPECT_EQ(metrics.kv_operations(KvVerb::kInsertKeyValue, true), 0u);
  EXPECT_EQ(metrics.kv_latency(KvVerb::kTryGetKeyValue).Read().count, 3u);
  EXPECT_EQ(KvVerbName(KvVerb::kCompareAndSwap), "compare_and_swap");
}

TEST(LeaderMetricsTest, KvVerbs_EveryCallOfTheListAndTheWatchesWithTheirLabels) {
  // The list of key-value calls (kv_calls.h) names each verb and its label once.
  static_assert(KvVerbOf<proto::InsertKeyValueRequest>() == KvVerb::kInsertKeyValue);
  static_assert(KvVerbOf<proto::WaitForKeysRequest>() == KvVerb::kWaitForKeys);
  static_assert(KvVerbOf<proto::StopWatchKeyRequest>() == KvVerb::kStopWatchKey);
  EXPECT_EQ(static_cast<int>(KvVerb::kCount), 12);
  EXPECT_EQ(KvVerbName(KvVerb::kInsertKeyValue), "insert");
  EXPECT_EQ(KvVerbName(KvVerb::kGetKeyValueDir), "get_dir");
  EXPECT_EQ(KvVerbName(KvVerb::kReduceKeyValueDir), "reduce_dir");
  EXPECT_EQ(KvVerbName(KvVerb::kWaitForKeys), "wait_for_keys");
  EXPECT_EQ(KvVerbName(KvVerb::kWatchKey), "watch");
  EXPECT_EQ(KvVerbName(KvVerb::kStopWatchKey), "stop_watch");
  EXPECT_EQ(KvVerbName(KvVerb::kCount), "unknown");
}

TEST(LeaderMetricsTest, CountEvent_FailuresByCauseAndEventsByKind) {
  LeaderMetrics metrics;
  proto::JobEvent failed;
  failed.set_kind(proto::TASK_FAILED);
  failed.set_error_code(static_cast<int>(absl::StatusCode::kUnavailable));
  metrics.CountEvent(failed);
  failed.set_error_code(99);  // not a code: counted as Unknown
  metrics.CountEvent(failed);
  proto::JobEvent registered;
  registered.set_kind(proto::TASK_REGISTERED);
  metrics.CountEvent(registered);
  EXPECT_EQ(metrics.task_failures(absl::StatusCode::kUnavailable), 1u);
  EXPECT_EQ(metrics.task_failures(absl::StatusCode::kUnknown), 1u);
  EXPECT_EQ(metrics.events(proto::TASK_FAILED), 2u);
  EXPECT_EQ(metrics.events(proto::TASK_REGISTERED), 1u);
  EXPECT_EQ(metrics.events(proto::ROUND_STARTED), 0u);
}

TEST(LeaderMetricsTest, CountEvent_BarrierEnds_ObserveTheirWait) {
  LeaderMetrics metrics;
  proto::JobEvent passed;
  passed.set_kind(proto::BARRIER_PASSED);
  passed.set_waited_ms(1500);
  metrics.CountEvent(passed);
  proto::JobEvent opened;
  opened.set_kind(proto::BARRIER_OPENED);
  metrics.CountEvent(opened);
  MetricHistogram::Reading wait = metrics.barrier_wait().Read();
  EXPECT_EQ(wait.count, 1u);
  EXPECT_DOUBLE_EQ(wait.sum, 1.5);
  EXPECT_EQ(metrics.events(proto::BARRIER_PASSED), 1u);
}

TEST(LeaderMetricsTest, DurableWrite_TimesAndGroupSizes) {
  LeaderMetrics metrics;
  metrics.DurableWrite(std::chrono::milliseconds(2), 3, 10);
  metrics.DurableWrite(std::chrono::milliseconds(4), 1, 2);
  EXPECT_EQ(metrics.durable_write().Read().count, 2u);
  EXPECT_NEAR(metrics.durable_write().Read().sum, 0.006, 1e-9);
  EXPECT_EQ(metrics.durable_group_size().Read().sum, 4);
  EXPECT_EQ(metrics.durable_changes(), 12u);
}

TEST(LeaderMetricsTest, Refused_ByReason) {
  LeaderMetrics metrics;
  metrics.Refused(Refusal::kUnauthenticated);
  metrics.Refused(Refusal::kUnauthenticated);
  EXPECT_EQ(metrics.refused(Refusal::kUnauthenticated), 2u);
  EXPECT_EQ(metrics.refused(Refusal::kWrongToken), 0u);
  EXPECT_EQ(RefusalName(Refusal::kTlsFailed), "tls_failed");
}

}  // namespace
}  // namespace muster
