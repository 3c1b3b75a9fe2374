// SPDX-License-Identifier: BSD-3-Clause
// time_format: the timestamps Jupyter clients parse.
#pragma once

#include <chrono>
#include <string>

namespace cellgate::common {

using SystemTime = std::chrono::system_clock::time_point;

// UTC as `%Y-%m-%dT%H:%M:%S.%fZ` (microseconds and a literal Z): jupyter_server's
// GatewayKernelManager parses last_activity with exactly this format.
std::string iso8601(SystemTime t);
std::string iso8601_now();

}  // namespace cellgate::common
