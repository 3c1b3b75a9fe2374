// SPDX-License-Identifier: BSD-3-Clause
// latency_histogram: a Prometheus histogram of durations whose observe() takes no lock.
#include "metrics/latency_histogram.h"

#include <algorithm>

#include "common/assert.h"

namespace cellgate::metrics {

LatencyHistogram::LatencyHistogram(std::initializer_list<double> bounds) {
  CELLGATE_ASSERT(bounds.size() <= kMaxBounds);
  for (double b : bounds) {
    CELLGATE_ASSERT(n_bounds_ == 0 || b > bounds_[n_bounds_ - 1]);
    bounds_[n_bounds_++] = b;
  }
}

void LatencyHistogram::observe(double seconds) noexcept {
  if (!(seconds > 0)) seconds = 0;  // NaN too
  size_t i = 0;
  while (i < n_bounds_ && seconds > bounds_[i]) ++i;  // le: a value equal to a bound counts in it
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  // Saturates at ~584 years, far beyond any duration observed here.
  const double ns = std::min(seconds * 1e9, 1.8e19);
  sum_ns_.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
}

LatencyHistogram::Snapshot LatencyHistogram::snapshot() const {
  Snapshot s;
  s.bounds.assign(bounds_.begin(), bounds_.begin() + static_cast<std::ptrdiff_t>(n_bounds_));
  uint64_t running = 0;
  for (size_t i = 0; i <= n_bounds_; ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.count = running;
  s.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
  return s;
}

LatencyHistogram start_latency_histogram() {
  return LatencyHistogram{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

LatencyHistogram duration_histogram() {
  return LatencyHistogram{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
}

}  // namespace cellgate::metrics
