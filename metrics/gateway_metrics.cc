// SPDX-License-Identifier: BSD-3-Clause
// gateway_metrics: the event-driven figures, and the hooks gateway code calls when events happen.
#include "metrics/gateway_metrics.h"

namespace cellgate::metrics {

// Each histogram is built in place (it holds atomics, so it cannot be copied or moved).
GatewayMetrics::GatewayMetrics()
    : start_seconds_{start_latency_histogram(), start_latency_histogram(), start_latency_histogram()},
      execute_seconds_(duration_histogram()),
      snapshot_seconds_(duration_histogram()),
      restore_seconds_(duration_histogram()) {
  static_assert(static_cast<size_t>(StartPath::kCount) == 3, "one start histogram per path");
}

}  // namespace cellgate::metrics
