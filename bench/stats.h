// Order statistics for benchmark samples: median, percentiles and the spread of repeated runs.
// Header-only; every benchmark program and the report use it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace muster::bench {

struct Summary {
  size_t count = 0;
  double min = 0;
  double median = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
};

// The q-quantile (0 <= q <= 1) of sorted samples, nearest-rank method; 0 for no samples.
inline double SortedPercentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

// The median of sorted samples (the mean of the two middle ones for an even count).
inline double SortedMedian(const std::vector<double>& sorted) {
  if (sorted.empty()) return 0;
  size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

inline Summary Summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.median = SortedMedian(samples);
  s.p90 = SortedPercentile(samples, 0.90);
  s.p99 = SortedPercentile(samples, 0.99);
  return s;
}

// Relative spread of repeated runs: (max - min) / median, 0 when the median is 0.
inline double RelativeSpread(const Summary& s) {
  return s.median == 0 ? 0 : (s.max - s.min) / s.median;
}

}  // namespace muster::bench
