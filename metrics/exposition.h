// SPDX-License-Identifier: BSD-3-Clause
// exposition: the Prometheus text format of the gateway's figures, through prometheus-cpp.
#pragma once

#include <string>
#include <string_view>

#include "metrics/census.h"
#include "metrics/gateway_metrics.h"

namespace cellgate::metrics {

// The Content-Type of render()'s text (exposition format 0.0.4).
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

struct ExpositionOptions {
  bool per_user = false;     // --metrics-per-user: add the cellgate_user_* families
  std::string version;       // cellgate_build_info{version}
};

// Every family, in a fixed order, serialised by prometheus-cpp's TextSerializer (which escapes
// label values). Also the standard process_* figures of this process, read from /proc/self.
// Thread-safe (reads atomics); allocates the text, so it is for the scrape, not a hot path.
std::string render(const GatewayMetrics& metrics, const Census& census, const ExpositionOptions& options);

}  // namespace cellgate::metrics
