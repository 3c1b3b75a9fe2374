// SPDX-License-Identifier: BSD-3-Clause
// latency_histogram: a Prometheus histogram of durations whose observe() takes no lock.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace cellgate::metrics {

// Fixed upper bounds (seconds, ascending), chosen at construction. prometheus-cpp's own Histogram
// takes a mutex per Observe; this one does three relaxed atomic adds, so the io thread never waits
// for a scrape or another thread.
class LatencyHistogram {
 public:
  static constexpr size_t kMaxBounds = 16;

  // bounds: ascending, at most kMaxBounds (asserted). +Inf is implied.
  explicit LatencyHistogram(std::initializer_list<double> bounds);

  // Thread-safe, lock-free, no allocation. Negative or NaN durations count as 0.
  void observe(double seconds) noexcept;

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf (== count)
    uint64_t count = 0;
    double sum_seconds = 0;
  };
  // A consistent-enough view for a scrape: count is the sum of the buckets read, so the +Inf
  // bucket always equals the count, as the exposition format requires.
  Snapshot snapshot() const;

 private:
  std::array<double, kMaxBounds> bounds_{};
  size_t n_bounds_ = 0;
  std::array<std::atomic<uint64_t>, kMaxBounds + 1> buckets_{};  // not cumulative; last = +Inf
  std::atomic<uint64_t> sum_ns_{0};
};

// Bounds for a kernel start (a warm-pool claim takes ms, a cold jailed start ~0.5 s).
LatencyHistogram start_latency_histogram();
// Bounds for an execute round trip and for snapshots (ms to minutes).
LatencyHistogram duration_histogram();

}  // namespace cellgate::metrics
